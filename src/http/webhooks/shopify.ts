import { assertKnownOptions, optionNames } from '../../core/errors/option-checks.js'
import { anySignatureMatches, base64Digest, headerOf, refused, secretKeys, verified, type WebhookSecrets } from './signing.js'
import type { WebhookVerifier } from './verifier.js'

/** What `shopifySignature` takes: the app's client secret(s). */
export interface ShopifySignatureOptions {
  /**
   * The app's client secret; an array of the old and the new one while it is rotated
   * (Shopify may sign with the old one for up to an hour after a rotation).
   */
  secret: WebhookSecrets
}

const OPTIONS = optionNames<ShopifySignatureOptions>({ secret: true })
const HEADER = 'x-shopify-hmac-sha256'

/**
 * Verifies Shopify's `X-Shopify-Hmac-Sha256` header: the base64 HMAC-SHA256 under the
 * app's client secret over the raw body. Shopify signs no timestamp, so there is no
 * window: a repeat is caught by its id. The event id is `X-Shopify-Event-Id`, which
 * Shopify documents as what marks a duplicate: one event sent to two subscriptions of a
 * topic comes with two `X-Shopify-Webhook-Id`s and one event id. A delivery without it
 * falls back to `X-Shopify-Webhook-Id`, which its retries keep.
 * @throws InvalidOptionError naming the option
 * @example
 * const shopify = shopifySignature({ secret: process.env.SHOPIFY_CLIENT_SECRET! })
 * const verification = shopify.verify({ header: (name) => request.headers.get(name), body: new Uint8Array(await request.arrayBuffer()) })
 * if (verification.status === 'refused') return new Response(verification.detail, { status: 401 })
 * @see docs/guides/webhooks-shopify.md
 */
export function shopifySignature(options: ShopifySignatureOptions): WebhookVerifier {
  const caller = 'shopifySignature'
  assertKnownOptions(caller, options, OPTIONS)
  const keys = secretKeys(caller, options.secret, (one) => one)

  return {
    scheme: 'shopify',
    verify(delivery) {
      const header = headerOf(delivery, HEADER)
      if (header === undefined) return refused('missing-header', 'The X-Shopify-Hmac-Sha256 header is missing')
      const digest = base64Digest(header.trim())
      if (digest === undefined) return refused('malformed-header', 'X-Shopify-Hmac-Sha256 must be 32 bytes in base64')
      if (!anySignatureMatches(keys, [delivery.body], [digest])) {
        return refused('no-matching-signature', 'X-Shopify-Hmac-Sha256 does not match the body under the client secret')
      }
      return verified(headerOf(delivery, 'x-shopify-event-id') ?? headerOf(delivery, 'x-shopify-webhook-id'))
    },
  }
}
