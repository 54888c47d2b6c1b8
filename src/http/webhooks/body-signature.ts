import { anySignatureMatches, headerOf, refused, secretKeys, verified, type WebhookSecrets } from './signing.js'
import type { WebhookDelivery, WebhookVerifier } from './verifier.js'

/**
 * A scheme that signs the raw body alone: an HMAC-SHA256 under the secret in one header,
 * no timestamp (so no window: a repeat is caught by its event id). GitHub and Shopify.
 */
export interface BodySignatureScheme {
  /** For logs and metrics: `github`, `shopify`. */
  readonly scheme: string
  /** The signature's header, as the provider writes it (`X-Hub-Signature-256`); read case-insensitively. */
  readonly header: string
  /** What the header must hold, for the malformed-header detail ("sha256= and 64 hex digits"). */
  readonly format: string
  /** What the provider calls the secret, for the mismatch detail ("webhook secret"). */
  readonly secret: string
  /** The signature's bytes in the header's value, or undefined when it is not in `format`. */
  digest(header: string): Buffer | undefined
  /** The delivery's event id, which its retries keep. */
  eventId(delivery: WebhookDelivery): string | undefined
}

/** The verifier of `scheme` under `secret` (checked by `secretKeys` for `caller`). */
export function bodySignatureVerifier(caller: string, scheme: BodySignatureScheme, secret: WebhookSecrets): WebhookVerifier {
  const keys = secretKeys(caller, secret, (one) => one)
  const name = scheme.header.toLowerCase()
  return {
    scheme: scheme.scheme,
    verify(delivery) {
      const header = headerOf(delivery, name)
      if (header === undefined) return refused('missing-header', `The ${scheme.header} header is missing`)
      const digest = scheme.digest(header)
      if (digest === undefined) return refused('malformed-header', `${scheme.header} must be ${scheme.format}`)
      if (!anySignatureMatches(keys, [delivery.body], [digest])) {
        return refused('no-matching-signature', `${scheme.header} does not match the body under the ${scheme.secret}`)
      }
      return verified(scheme.eventId(delivery))
    },
  }
}
