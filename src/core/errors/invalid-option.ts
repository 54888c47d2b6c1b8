import { IdemError } from './idem-error.js'

/** A configuration mistake, reported at start-up with the option it concerns. */
export class InvalidOptionError extends IdemError {
  override readonly name = 'InvalidOptionError'
  readonly code = 'invalid-option' as const
}
