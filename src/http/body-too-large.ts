import { IdemError } from '../core/errors/idem-error.js'

declare module '../core/errors/idem-error.js' {
  interface IdemErrorCodes {
    /** The HTTP front end's own: a request body over `maxBodyBytes` (`BodyTooLargeError`). */
    'body-too-large': true
  }
}

/** The request body is larger than the configured limit; nothing was run or stored. */
export class BodyTooLargeError extends IdemError {
  override readonly name = 'BodyTooLargeError'
  readonly code = 'body-too-large' as const
}
