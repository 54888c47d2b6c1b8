import { IdemError, type IdemErrorOptions } from './idem-error.js'

/**
 * A leased call lost its key to another call: its lease ran out (a long pause, a
 * partition) and a retry took the key over with a newer fencing token. Nothing more
 * was written under the old token: no step and no outcome. The call that took over
 * finishes the work, so a retry after `retryAfterSeconds` gets its outcome.
 */
export class LeaseLostError extends IdemError {
  override readonly name = 'LeaseLostError'
  readonly code = 'lease-lost' as const

  constructor(message: string, options: IdemErrorOptions = {}) {
    super(message, { retryAfterSeconds: 1, ...options })
  }
}
