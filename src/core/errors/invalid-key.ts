import { IdemError } from './idem-error.js'

/**
 * The key is not 1–255 visible ASCII characters, or the front end could not read one
 * key from what the client sent; or another part of the identity a client can shape cannot be one: a scope
 * (empty, over 1,024 characters, NUL, not well-formed UTF-16) or a message id (not
 * well-formed UTF-16). The message names which.
 */
export class InvalidKeyError extends IdemError {
  override readonly name = 'InvalidKeyError'
  readonly code = 'invalid-key' as const
}
