// What the verifier tests share: one body and one signing moment, and a verifier called
// as an adapter calls it, with its clock from the test.
import type { WebhookVerification, WebhookVerifier } from '../../../src/http/webhooks/index.js'
import { expect } from 'vitest'
import { randomBytes } from 'node:crypto'

/** The moment every delivery here is signed at, in Unix seconds; verifiers get their clock from the test. */
export const SIGNED_AT = 1_767_000_000
export const at = (seconds: number) => () => seconds * 1000

/** A Standard Webhooks secret: `whsec_` and 24 random bytes in base64. */
export const whsec = () => `whsec_${randomBytes(24).toString('base64')}`

/** One body with every provider's event id field in it (Stripe's `id`, Slack's `event_id`) and non-ASCII text. */
export const BODY = JSON.stringify({ id: 'evt_1NG8Du2eZvKYlo2CUI79vXWy', object: 'event', type: 'payment_intent.succeeded', event_id: 'Ev0PV52K25', data: { amount: 1500, note: 'café ✓' } })

/** Verifies a delivery as an adapter would hand it over: headers through a Fetch `Headers` (any case), the body as bytes. */
export function verify(verifier: WebhookVerifier, headers: Record<string, string>, body: string, now = at(SIGNED_AT)): WebhookVerification {
  const lookup = new Headers(headers)
  return verifier.verify({ header: (name) => lookup.get(name), body: new TextEncoder().encode(body), now })
}

/** The check that refused the verification (failing the test when it was not refused). */
export function refusedBy(verification: WebhookVerification): string {
  expect(verification.status).toBe('refused')
  return verification.status === 'refused' ? verification.check : verification.status
}
