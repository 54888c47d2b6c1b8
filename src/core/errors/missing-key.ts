import { IdemError } from './idem-error.js'

/** The route requires an idempotency key and the request carried none. */
export class MissingKeyError extends IdemError {
  override readonly name = 'MissingKeyError'
  readonly code = 'missing-key' as const
}
