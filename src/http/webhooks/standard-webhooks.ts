import { assertKnownOptions, optionNames } from '../../core/errors/option-checks.js'
import { anySignatureMatches, assertTolerance, base64Digest, headerOf, outsideWindow, refused, secretKeys, verified, type WebhookSecrets } from './signing.js'
import type { WebhookDelivery, WebhookVerification, WebhookVerifier } from './verifier.js'

/** What `standardWebhooksSignature` takes: the endpoint's signing secret(s) and the timestamp window. */
export interface StandardWebhooksSignatureOptions {
  /**
   * The endpoint's signing secret: `whsec_` and the key in base64 (or the base64 alone),
   * as Svix, Clerk, Resend and other Standard Webhooks senders show it; an array of them
   * while one is rotated.
   */
  secret: WebhookSecrets
  /** How far `webhook-timestamp` may be from this clock, either way. @default 300_000 (the spec's five minutes) */
  toleranceMs?: number
}

/** The Standard Webhooks window: five minutes. */
export const STANDARD_WEBHOOKS_TOLERANCE_MS = 300_000

const OPTIONS = optionNames<StandardWebhooksSignatureOptions>({ secret: true, toleranceMs: true })
const PREFIX = 'whsec_'

/** The three headers of a delivery, by one family's names. */
interface HeaderFamily {
  readonly id: string
  readonly timestamp: string
  readonly signature: string
}

/**
 * Svix's branded names first, then the spec's, as Svix's own library reads them: a family
 * is used only when all three of its headers are there, so a delivery is never verified
 * with the id of one family and the timestamp of the other.
 */
const FAMILIES: readonly HeaderFamily[] = [
  { id: 'svix-id', timestamp: 'svix-timestamp', signature: 'svix-signature' },
  { id: 'webhook-id', timestamp: 'webhook-timestamp', signature: 'webhook-signature' },
]

/** The delivery's signed headers, from the first family it has all three of. */
interface SignedHeaders {
  readonly family: HeaderFamily
  readonly id: string
  readonly timestamp: string
  readonly signature: string
}

/**
 * Verifies a Standard Webhooks delivery (the scheme of Svix, Clerk, Resend and others):
 * `webhook-signature` holds space-separated `v1,<base64>` signatures, each an
 * HMAC-SHA256 under the secret's key over `<webhook-id>.<webhook-timestamp>.<raw body>`;
 * any one may match (a sender signs with each active secret while one is rotated), and
 * other versions (`v1a`, asymmetric) are ignored. The timestamp must be inside the
 * window. The headers may also come under Svix's names, `svix-id`, `svix-timestamp` and
 * `svix-signature` (what Clerk's and Resend's docs verify), as Svix's library accepts
 * them. The event id is `webhook-id` (or `svix-id`), which the signature covers.
 * @throws InvalidOptionError naming the option: a secret that is not base64, a tolerance out of range
 * @example
 * const resend = standardWebhooksSignature({ secret: process.env.RESEND_WEBHOOK_SECRET! })
 * const verification = resend.verify({ header: (name) => request.headers.get(name), body: new Uint8Array(await request.arrayBuffer()) })
 * if (verification.status === 'refused') return new Response(verification.detail, { status: 401 })
 * @see docs/guides/webhooks-standard-webhooks.md
 */
export function standardWebhooksSignature(options: StandardWebhooksSignatureOptions): WebhookVerifier {
  const caller = 'standardWebhooksSignature'
  assertKnownOptions(caller, options, OPTIONS)
  const { secret, toleranceMs = STANDARD_WEBHOOKS_TOLERANCE_MS } = options
  const keys = secretKeys(caller, secret, (one) => {
    const base64 = one.startsWith(PREFIX) ? one.slice(PREFIX.length) : one
    const padded = base64.includes('=')
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(base64) || (padded ? base64.length % 4 !== 0 : base64.length % 4 === 1)) {
      throw new Error(`must be "${PREFIX}" and the key in base64, as the sender shows it`)
    }
    return Buffer.from(base64, 'base64')
  })
  assertTolerance(caller, toleranceMs)

  return {
    scheme: 'standard-webhooks',
    verify(delivery) {
      const headers = signedHeaders(delivery)
      if ('status' in headers) return headers
      const { family, id, timestamp } = headers
      const signatures: Buffer[] = []
      for (const entry of headers.signature.split(' ')) {
        if (!entry.startsWith('v1,')) continue
        const digest = base64Digest(entry.slice('v1,'.length))
        if (digest !== undefined) signatures.push(digest)
      }
      if (signatures.length === 0) return refused('malformed-header', `${family.signature} has no v1,<base64> signature of 32 bytes`)
      const outside = outsideWindow(delivery, family.timestamp, timestamp, toleranceMs)
      if (outside !== undefined) return outside
      if (!anySignatureMatches(keys, [id, '.', timestamp, '.', delivery.body], signatures)) {
        return refused('no-matching-signature', `No v1 signature in ${family.signature} matches the body under the endpoint secret`)
      }
      return verified(id)
    },
  }
}

/**
 * The three headers of the first family the delivery has whole, or a refusal naming the
 * first one missing: of the family it has some of, else of the spec's.
 */
function signedHeaders(delivery: WebhookDelivery): SignedHeaders | WebhookVerification {
  let partial: HeaderFamily | undefined
  for (const family of FAMILIES) {
    const id = headerOf(delivery, family.id)
    const timestamp = headerOf(delivery, family.timestamp)
    const signature = headerOf(delivery, family.signature)
    if (id !== undefined && timestamp !== undefined && signature !== undefined) return { family, id, timestamp, signature }
    if (partial === undefined && (id ?? timestamp ?? signature) !== undefined) partial = family
  }
  const family = partial ?? FAMILIES[FAMILIES.length - 1]!
  const missing = [family.id, family.timestamp, family.signature].find((name) => headerOf(delivery, name) === undefined)
  return refused('missing-header', `The ${missing} header is missing`)
}
