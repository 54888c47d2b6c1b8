import { IdemError, type IdemErrorOptions } from './idem-error.js'

/**
 * The key store could not be reached or did not answer in time. idem never runs a call
 * unprotected because its store is down, so retrying with the same key after
 * `retryAfterSeconds` is safe. It does not say that nothing ran: the store can fail
 * after the call ran, while its outcome was being stored. Then a transactional call was
 * rolled back with its effects (or, when the connection died during COMMIT, may have
 * committed: the retry replays it or runs), and a leased call keeps its claim until the
 * lease runs out, so a retry either finds the outcome that landed or takes the key over
 * and resumes after the last saved step.
 */
export class StoreUnavailableError extends IdemError {
  override readonly name = 'StoreUnavailableError'
  readonly code = 'store-unavailable' as const

  constructor(message: string, options: IdemErrorOptions = {}) {
    super(message, { retryAfterSeconds: 1, ...options })
  }
}
