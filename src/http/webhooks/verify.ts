// The receiver's `verify` option made one check, decided once at construction: a
// built-in verifier, the app's function, or none. Every way answers in the same terms,
// so the receiver alone decides what each answer becomes.
import { InvalidOptionError } from '../../core/errors/invalid-option.js'
import type { HttpRequest } from '../exchange.js'
import type { WebhookCheck, WebhookHandshakeReply, WebhookVerifier } from './verifier.js'

/**
 * How a delivery's signature is checked, on the raw body bytes before anything is parsed
 * or recorded: a built-in verifier from `idem/webhooks` (`stripeSignature({ secret })`,
 * …), or a function of the framework's request and the raw bytes (false answers 401).
 */
export type WebhookVerify<R = Request> = WebhookVerifier | ((request: R, rawBody: Uint8Array) => boolean | Promise<boolean>)

/** What the check made of one delivery: an event (with the verifier's id, if it read one), a handshake to answer, or a refusal. */
export type Signed =
  | { readonly status: 'verified'; readonly eventId: string | undefined }
  | { readonly status: 'handshake'; readonly reply: WebhookHandshakeReply }
  /** `check` is the built-in verifier's; the app's function says only no. */
  | { readonly status: 'refused'; readonly check?: WebhookCheck; readonly detail: string }

/** The `verify` option as one check, with what the event stream says of it. */
export interface SignatureCheck<R> {
  /** The built-in verifier's scheme (`stripe`, …); undefined for a function or no `verify`. */
  readonly scheme: string | undefined
  /** What a delivery that passed is reported as: `verified`, or `unchecked` without `verify`. */
  readonly passed: 'verified' | 'unchecked'
  check(request: HttpRequest, native: R, bytes: Uint8Array): Signed | Promise<Signed>
}

const REFUSED: Signed = { status: 'refused', detail: 'The webhook signature does not verify' }
const UNCHECKED: Signed = { status: 'verified', eventId: undefined }

/**
 * The check for option `verify`.
 * @throws InvalidOptionError naming the option
 */
export function signatureCheck<R>(caller: string, verify: unknown): SignatureCheck<R> {
  if (verify === undefined) return { scheme: undefined, passed: 'unchecked', check: () => UNCHECKED }
  if (isVerifier(verify)) {
    return {
      scheme: verify.scheme,
      passed: 'verified',
      check: (request, _native, body) => verify.verify({ header: (name) => request.header(name), body }),
    }
  }
  if (typeof verify !== 'function') {
    throw new InvalidOptionError(`${caller}: option "verify" must be a verifier (stripeSignature({ secret }), … from idem/webhooks) or a function (request, rawBody) => boolean`)
  }
  const signed = verify as (request: R, rawBody: Uint8Array) => boolean | Promise<boolean>
  return { scheme: undefined, passed: 'verified', check: async (_request, native, bytes) => ((await signed(native, bytes)) ? UNCHECKED : REFUSED) }
}

function isVerifier(value: unknown): value is WebhookVerifier {
  return typeof value === 'object' && value !== null && typeof (value as { verify?: unknown }).verify === 'function'
}
