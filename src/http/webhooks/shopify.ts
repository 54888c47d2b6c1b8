import { assertKnownOptions, optionNames } from '../../core/errors/option-checks.js'
import { bodySignatureVerifier, type BodySignatureScheme } from './body-signature.js'
import { base64Digest, headerOf, type WebhookSecrets } from './signing.js'
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
const SHOPIFY: BodySignatureScheme = {
  scheme: 'shopify',
  header: 'X-Shopify-Hmac-Sha256',
  format: '32 bytes in base64',
  secret: 'client secret',
  digest: (header) => base64Digest(header.trim()),
  eventId: (delivery) => headerOf(delivery, 'x-shopify-event-id') ?? headerOf(delivery, 'x-shopify-webhook-id'),
}

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
  assertKnownOptions('shopifySignature', options, OPTIONS)
  return bodySignatureVerifier('shopifySignature', SHOPIFY, options.secret)
}
