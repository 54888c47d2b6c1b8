import { IdemError } from './idem-error.js'

/** The request body is larger than the configured limit; nothing was run or stored. */
export class BodyTooLargeError extends IdemError {
  override readonly name = 'BodyTooLargeError'
  readonly code = 'body-too-large' as const
}
