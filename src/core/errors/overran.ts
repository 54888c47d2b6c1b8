import { IdemError, type IdemErrorOptions } from './idem-error.js'

/**
 * A call held its key past its deadline (`deadlineMs`) and was given up on: its
 * transaction was rolled back (or its lease let go), so nothing of it was stored and a
 * retry with the same key runs afresh, after `retryAfterSeconds`. What the function
 * does later is not stored, and its writes through the transaction fail.
 */
export class OverranError extends IdemError {
  override readonly name = 'OverranError'
  readonly code = 'overran' as const

  constructor(message: string, options: IdemErrorOptions = {}) {
    super(message, { retryAfterSeconds: 1, ...options })
  }
}
