import { IdemClientError } from './client-error.js'

/**
 * Every attempt failed without an HTTP answer (connection refused or dropped, per-attempt
 * timeout). The request may or may not have run on the server: retry later with the
 * same `key` and the server will replay it if it did. `cause` is the last failure.
 */
export class RetriesExhaustedError extends IdemClientError {
  override readonly name = 'RetriesExhaustedError'
}
