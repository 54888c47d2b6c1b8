import { IdemError, type IdemErrorOptions } from './idem-error.js'

/**
 * An outcome (or a leased call's step result) is larger than its store can hold: its
 * serialised form has more UTF-8 bytes than the store's `maxOutcomeBytes`. Retrying
 * with the same key gives this error again:
 * - transactional engine (`createIdem`): the call's effects and its key were rolled
 *   back, so nothing happened; a retry runs again and fails again;
 * - leased engine (`createLeasedIdem`): the call ran (its effects are outside the store),
 *   so the key is recorded as completed with an outcome too large to keep, and every
 *   retry is answered with this error without running anything again.
 *
 * The HTTP middleware never causes it with a response body: a body its store cannot
 * hold is stored without it (`maxStoredBodyBytes`).
 */
export class OutcomeTooLargeError extends IdemError {
  override readonly name = 'OutcomeTooLargeError'
  readonly code = 'outcome-too-large' as const
  /** The serialised outcome's size, in UTF-8 bytes (idem's engines always set it). */
  readonly outcomeBytes: number | undefined
  /** The most the store holds, its `maxOutcomeBytes` (idem's engines always set it). */
  readonly maxOutcomeBytes: number | undefined

  constructor(message: string, options: OutcomeTooLargeOptions = {}) {
    super(message, options)
    this.outcomeBytes = options.outcomeBytes
    this.maxOutcomeBytes = options.maxOutcomeBytes
  }
}

/** What an `OutcomeTooLargeError` carries besides its message: the sizes that did not fit. */
export interface OutcomeTooLargeOptions extends IdemErrorOptions {
  outcomeBytes?: number
  maxOutcomeBytes?: number
}
