import { IdemError } from './idem-error.js'

/** The key was first used with a different request (method, route or body). */
export class FingerprintMismatchError extends IdemError {
  override readonly name = 'FingerprintMismatchError'
  readonly code = 'fingerprint-mismatch' as const
}
