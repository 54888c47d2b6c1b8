import { IdemError } from './idem-error.js'

/** The key is not 1–255 visible ASCII characters, or the header is not a single sf-string. */
export class InvalidKeyError extends IdemError {
  override readonly name = 'InvalidKeyError'
  readonly code = 'invalid-key' as const
}
