import { assertKnownOptions, optionNames } from '../../core/errors/option-checks.js'
import { anySignatureMatches, assertTolerance, headerOf, hexDigest, jsonField, outsideWindow, refused, secretKeys, verified, type WebhookSecrets } from './signing.js'
import type { WebhookVerifier } from './verifier.js'

/** What `stripeSignature` takes: the endpoint's signing secret(s) and the timestamp window. */
export interface StripeSignatureOptions {
  /** The endpoint's signing secret (`whsec_…`, from the Dashboard or `stripe listen`); an array of them while one is rolled. */
  secret: WebhookSecrets
  /** How far the signed timestamp `t` may be from this clock, either way. @default 300_000 (Stripe's 300 s) */
  toleranceMs?: number
}

/** Stripe's default tolerance: 300 s. */
export const STRIPE_TOLERANCE_MS = 300_000

const OPTIONS = optionNames<StripeSignatureOptions>({ secret: true, toleranceMs: true })
const HEADER = 'stripe-signature'

/**
 * Verifies Stripe's `Stripe-Signature` header (`t=<unix seconds>,v1=<hex>[,v1=<hex>…]`):
 * HMAC-SHA256 under the endpoint's secret over `<t>.<raw body>`. Any `v1` value may
 * match (Stripe sends one per active secret while a secret is rolled); other schemes
 * (`v0`) are ignored. Unlike Stripe's SDK it also refuses a timestamp further ahead than
 * the tolerance. The event id is the body's `evt_…` id, read once the signature holds.
 * @throws InvalidOptionError naming the option: a secret that is not `whsec_…`, a tolerance out of range
 * @example
 * const stripe = stripeSignature({ secret: process.env.STRIPE_WEBHOOK_SECRET! })
 * const verification = stripe.verify({ header: (name) => request.headers.get(name), body: new Uint8Array(await request.arrayBuffer()) })
 * if (verification.status === 'refused') return new Response(verification.detail, { status: 401 })
 * @see docs/guides/webhooks-stripe.md
 */
export function stripeSignature(options: StripeSignatureOptions): WebhookVerifier {
  const caller = 'stripeSignature'
  assertKnownOptions(caller, options, OPTIONS)
  const { secret, toleranceMs = STRIPE_TOLERANCE_MS } = options
  const keys = secretKeys(caller, secret, (one) => {
    if (!one.startsWith('whsec_')) throw new Error('must be the endpoint\'s signing secret, which starts with "whsec_" (not an API key)')
    return one // Stripe keys the HMAC with the whole secret text, prefix included.
  })
  assertTolerance(caller, toleranceMs)

  return {
    scheme: 'stripe',
    verify(delivery) {
      const header = headerOf(delivery, HEADER)
      if (header === undefined) return refused('missing-header', 'The Stripe-Signature header is missing')
      let timestamp: string | undefined
      const signatures: Buffer[] = []
      for (const item of header.split(',')) {
        const at = item.indexOf('=')
        if (at === -1) continue
        const name = item.slice(0, at).trim()
        const value = item.slice(at + 1).trim()
        if (name === 't') {
          if (timestamp !== undefined) return refused('malformed-header', 'Stripe-Signature has more than one t=')
          timestamp = value
        } else if (name === 'v1') {
          const digest = hexDigest(value)
          if (digest !== undefined) signatures.push(digest)
        }
      }
      if (timestamp === undefined) return refused('malformed-header', 'Stripe-Signature has no t= timestamp')
      if (signatures.length === 0) return refused('malformed-header', 'Stripe-Signature has no v1= signature of 64 hex digits')
      const outside = outsideWindow(delivery, 'The Stripe-Signature timestamp', timestamp, toleranceMs)
      if (outside !== undefined) return outside
      if (!anySignatureMatches(keys, [timestamp, '.', delivery.body], signatures)) {
        return refused('no-matching-signature', 'No v1 signature in Stripe-Signature matches the body under the endpoint secret')
      }
      const id = jsonField(delivery.body, 'id')
      return verified(id?.startsWith('evt_') ? id : undefined)
    },
  }
}
