import { IdemError } from './idem-error.js'

/** The function returned a value that cannot be stored as JSON; its effects were rolled back. */
export class OutcomeNotSerializableError extends IdemError {
  override readonly name = 'OutcomeNotSerializableError'
  readonly code = 'outcome-not-serializable' as const
}
