import { IdemError } from './idem-error.js'

/**
 * A stored outcome (or step result) cannot be read back as what was stored: the row is
 * corrupted or truncated, is not in the form its front end stores, or was encrypted with
 * a key this process does not have. Nothing is run again, since the effect may well
 * have happened: replaying a guess or running twice would both break the promise.
 */
export class OutcomeUnreadableError extends IdemError {
  override readonly name = 'OutcomeUnreadableError'
  readonly code = 'outcome-unreadable' as const
}
