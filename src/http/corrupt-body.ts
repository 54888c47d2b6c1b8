import { IdemError } from '../core/errors/idem-error.js'

declare module '../core/errors/idem-error.js' {
  interface IdemErrorCodes {
    /** The HTTP front end's own: a request body that does not decode as its `Content-Encoding` says (`CorruptBodyError`). */
    'corrupt-body': true
  }
}

/**
 * The request body does not decode as its `Content-Encoding` says (not gzip at all,
 * truncated, a checksum that does not match), so it cannot be fingerprinted; nothing
 * was run or stored.
 */
export class CorruptBodyError extends IdemError {
  override readonly name = 'CorruptBodyError'
  readonly code = 'corrupt-body' as const
}
