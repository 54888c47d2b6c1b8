import { IdemError } from './idem-error.js'

/**
 * A key is required and none came: an HTTP request without one on a
 * route that requires one, a queue message without an id, a Lambda event without a key.
 * Every front end throws it, so it is the core's.
 */
export class MissingKeyError extends IdemError {
  override readonly name = 'MissingKeyError'
  readonly code = 'missing-key' as const
}
