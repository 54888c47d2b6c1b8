import { IdemError } from '../core/errors/idem-error.js'

declare module '../core/errors/idem-error.js' {
  interface IdemErrorCodes {
    /** The HTTP front end's own: a request body in a content coding idem does not decode (`UnsupportedEncodingError`). */
    'unsupported-encoding': true
  }
}

/**
 * The content codings the middleware decodes to fingerprint a body, as its 415 answer's
 * `Accept-Encoding` lists them (RFC 9110 §12.5.3). `x-gzip` is read as `gzip`, and
 * `identity` is no coding at all.
 */
export const DECODED_CODINGS = 'gzip, deflate, br'

/**
 * The request's `Content-Encoding` names a coding the middleware cannot decode (or more
 * codings than it decodes one after another), so its body cannot be fingerprinted;
 * nothing was read, run or stored.
 */
export class UnsupportedEncodingError extends IdemError {
  override readonly name = 'UnsupportedEncodingError'
  readonly code = 'unsupported-encoding' as const
}
