import { IdemClientError } from './client-error.js'

/**
 * The call's overall deadline passed before an answer the client could return. As with
 * `RetriesExhaustedError`, the request may have run: retry later with the same `key`.
 * `cause` is the last failure, if any.
 */
export class DeadlineExceededError extends IdemClientError {
  override readonly name = 'DeadlineExceededError'
}
