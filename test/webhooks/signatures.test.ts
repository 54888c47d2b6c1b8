// The built-in webhook verifiers (issue 35) against deliveries signed by each provider's
// own code: Stripe's SDK (`stripe.webhooks.generateTestHeaderString`), the Standard
// Webhooks reference library (`standardwebhooks` 1.1.1, what Svix, Clerk and Resend
// follow; its deliveries are sent under the spec's `webhook-*` names and under Svix's
// `svix-*` ones) and GitHub's `@octokit/webhooks-methods` (6.0.0). Shopify and Slack publish no
// signing library usable here, so their deliveries are signed in this file with
// node:crypto, step by step as their docs describe (Shopify: base64 HMAC-SHA256 of the
// raw body under the client secret; Slack: `v0=` and the hex HMAC-SHA256 of
// `v0:<timestamp>:<body>` under the signing secret).
import { createHmac, randomBytes } from 'node:crypto'
import { sign as githubSign } from '@octokit/webhooks-methods'
import fc from 'fast-check'
import { Webhook } from 'standardwebhooks'
import Stripe from 'stripe'
import { describe, expect, it } from 'vitest'
import { githubSignature, shopifySignature, slackSignature, standardWebhooksSignature, stripeSignature, type WebhookVerification, type WebhookVerifier } from '../../src/http/webhooks/index.js'
import { BODY, SIGNED_AT, at, refusedBy, verify, whsec } from './support/verify.js'

const stripe = new Stripe('sk_test_not_used_for_calls')

interface Provider {
  readonly name: string
  /** Two secrets of the provider's own shape: rotation signs with one and then the other. */
  readonly secrets: readonly [string, string]
  readonly verifier: (secret: string | readonly string[]) => WebhookVerifier
  /** Headers of one delivery of `body`, signed with `secret` at `SIGNED_AT` by the provider's code. */
  readonly sign: (body: string, secret: string) => Promise<Record<string, string>>
  /** The event id the verifier gives for `body` signed by `sign`. */
  readonly eventId: string | undefined
  /** The header the signature is in, to truncate and to merge. */
  readonly signatureHeader: string
  /** Every header `verify` requires. */
  readonly required: readonly string[]
  /** The timestamp window, for schemes that sign a timestamp: its header and the tolerance in seconds. */
  readonly window?: { readonly header: string; readonly seconds: number; readonly set: (headers: Record<string, string>, value: string) => void }
  /** Two deliveries' signature headers as one header that carries both, for schemes that allow several. */
  readonly merge?: (first: string, second: string) => string
}


const providers: readonly Provider[] = [
  {
    name: 'Stripe (signed by stripe.webhooks.generateTestHeaderString)',
    secrets: [`whsec_${randomBytes(16).toString('hex')}`, `whsec_${randomBytes(16).toString('hex')}`],
    verifier: (secret) => stripeSignature({ secret }),
    sign: async (payload, secret) => ({ 'Stripe-Signature': stripe.webhooks.generateTestHeaderString({ payload, secret, timestamp: SIGNED_AT }) }),
    eventId: 'evt_1NG8Du2eZvKYlo2CUI79vXWy',
    signatureHeader: 'Stripe-Signature',
    required: ['Stripe-Signature'],
    window: {
      header: 'Stripe-Signature',
      seconds: 300,
      set: (headers, value) => void (headers['Stripe-Signature'] = headers['Stripe-Signature']!.replace(/^t=\d+/, `t=${value}`)),
    },
    merge: (first, second) => `${first},${second.replace(/^t=\d+,/, '')}`,
  },
  standardWebhooks('webhook'),
  standardWebhooks('svix'),
  {
    name: 'GitHub (signed by @octokit/webhooks-methods 6.0.0)',
    secrets: [randomBytes(20).toString('hex'), randomBytes(20).toString('hex')],
    verifier: (secret) => githubSignature({ secret }),
    sign: async (payload, secret) => ({
      'X-Hub-Signature-256': await githubSign(secret, payload),
      'X-GitHub-Delivery': '72d3162e-cc78-11e3-81ab-4c9367dc0958',
      'X-GitHub-Event': 'push',
    }),
    eventId: '72d3162e-cc78-11e3-81ab-4c9367dc0958',
    signatureHeader: 'X-Hub-Signature-256',
    required: ['X-Hub-Signature-256'],
  },
  {
    name: 'Shopify (signed with node:crypto as its docs describe)',
    secrets: [randomBytes(16).toString('hex'), randomBytes(16).toString('hex')],
    verifier: (secret) => shopifySignature({ secret }),
    sign: async (payload, secret) => ({
      'X-Shopify-Hmac-Sha256': createHmac('sha256', secret).update(payload, 'utf8').digest('base64'),
      'X-Shopify-Webhook-Id': 'b54557e4-bdd9-4b37-8a5f-bf7d70bcd043',
      'X-Shopify-Event-Id': '98880550-7158-44d4-b7cd-2c97c8a091b5',
      'X-Shopify-Topic': 'orders/create',
    }),
    eventId: '98880550-7158-44d4-b7cd-2c97c8a091b5',
    signatureHeader: 'X-Shopify-Hmac-Sha256',
    required: ['X-Shopify-Hmac-Sha256'],
  },
  {
    name: 'Slack (signed with node:crypto as its docs describe)',
    secrets: [randomBytes(16).toString('hex'), randomBytes(16).toString('hex')],
    verifier: (secret) => slackSignature({ secret }),
    sign: async (payload, secret) => ({
      'X-Slack-Request-Timestamp': String(SIGNED_AT),
      'X-Slack-Signature': `v0=${createHmac('sha256', secret).update(`v0:${SIGNED_AT}:${payload}`, 'utf8').digest('hex')}`,
    }),
    eventId: 'Ev0PV52K25',
    signatureHeader: 'X-Slack-Signature',
    required: ['X-Slack-Signature', 'X-Slack-Request-Timestamp'],
    window: { header: 'X-Slack-Request-Timestamp', seconds: 300, set: (headers, value) => void (headers['X-Slack-Request-Timestamp'] = value) },
  },
]

/** Everything a refusal's detail must never show: the secrets, their keys, and every encoding of the signatures a verifier computes. */
function secretsAndSignatures(provider: Provider, headersOf: ReadonlyArray<Record<string, string>>): string[] {
  const forbidden = provider.secrets.flatMap((secret) => [secret, secret.replace(/^whsec_/, '')])
  for (const headers of headersOf) {
    for (const value of Object.values(headers)) {
      for (const part of value.split(/[ ,=]/)) if (part.length >= 40) forbidden.push(part, Buffer.from(part, part.length === 64 ? 'hex' : 'base64').toString('hex'))
    }
  }
  return forbidden
}

for (const provider of providers) {
  describe(provider.name, () => {
    const [oldSecret, newSecret] = provider.secrets

    it('a delivery signed by the provider verifies, with the event id', async () => {
      const headers = await provider.sign(BODY, newSecret)
      expect(verify(provider.verifier(newSecret), headers, BODY)).toEqual({ status: 'verified', eventId: provider.eventId })
    })

    it('a tampered body or a wrong secret: no signature matches', async () => {
      const headers = await provider.sign(BODY, newSecret)
      expect(refusedBy(verify(provider.verifier(newSecret), headers, BODY.replace('1500', '9500')))).toBe('no-matching-signature')
      expect(refusedBy(verify(provider.verifier(newSecret), headers, `${BODY}\n`))).toBe('no-matching-signature')
      expect(refusedBy(verify(provider.verifier(oldSecret), headers, BODY))).toBe('no-matching-signature')
    })

    it('rotation: with both secrets, deliveries signed with the old and with the new one verify; with the new one alone, the old is refused', async () => {
      const both = provider.verifier([newSecret, oldSecret])
      expect(verify(both, await provider.sign(BODY, oldSecret), BODY).status).toBe('verified')
      expect(verify(both, await provider.sign(BODY, newSecret), BODY).status).toBe('verified')
      expect(refusedBy(verify(provider.verifier([newSecret]), await provider.sign(BODY, oldSecret), BODY))).toBe('no-matching-signature')
    })

    if (provider.merge !== undefined) {
      const merge = provider.merge
      it('several signatures in one header: one that matches is enough, in either place', async () => {
        const byOld = (await provider.sign(BODY, oldSecret))[provider.signatureHeader]!
        const byNew = (await provider.sign(BODY, newSecret))[provider.signatureHeader]!
        const base = await provider.sign(BODY, newSecret)
        for (const header of [merge(byOld, byNew), merge(byNew, byOld)]) {
          expect(verify(provider.verifier(newSecret), { ...base, [provider.signatureHeader]: header }, BODY).status).toBe('verified')
        }
        const stranger = provider.verifier(provider.name.startsWith('Stripe') ? `whsec_${randomBytes(8).toString('hex')}` : whsec())
        expect(refusedBy(verify(stranger, { ...base, [provider.signatureHeader]: merge(byOld, byNew) }, BODY))).toBe('no-matching-signature')
      })
    }

    if (provider.window !== undefined) {
      const window = provider.window
      it(`the timestamp window (${window.seconds} s either way): inside verifies, a stale or future one is refused even when signed`, async () => {
        const headers = await provider.sign(BODY, newSecret)
        const verifier = provider.verifier(newSecret)
        expect(verify(verifier, headers, BODY, at(SIGNED_AT + window.seconds)).status).toBe('verified')
        expect(verify(verifier, headers, BODY, at(SIGNED_AT - window.seconds)).status).toBe('verified')
        expect(refusedBy(verify(verifier, headers, BODY, at(SIGNED_AT + window.seconds + 1)))).toBe('stale-timestamp')
        expect(refusedBy(verify(verifier, headers, BODY, at(SIGNED_AT - window.seconds - 1)))).toBe('future-timestamp')
        // A replay of a real delivery a day later, never seen before: still refused.
        expect(refusedBy(verify(verifier, headers, BODY, at(SIGNED_AT + 86_400)))).toBe('stale-timestamp')
      })

      it('a timestamp moved into the window does not carry the old signature with it', async () => {
        const headers = await provider.sign(BODY, newSecret)
        window.set(headers, String(SIGNED_AT + 60))
        expect(refusedBy(verify(provider.verifier(newSecret), headers, BODY))).toBe('no-matching-signature')
      })

      it('a timestamp that is not whole seconds is malformed', async () => {
        for (const value of ['', 'soon', '1767000000.5', '-1767000000', '0x69', '1e9', '17670000001767000000']) {
          const headers = await provider.sign(BODY, newSecret)
          window.set(headers, value)
          expect([value, refusedBy(verify(provider.verifier(newSecret), headers, BODY))]).toEqual([value, value === '' && window.header !== 'Stripe-Signature' ? 'missing-header' : 'malformed-header'])
        }
      })
    }

    it('a truncated or garbled signature header is malformed', async () => {
      const headers = await provider.sign(BODY, newSecret)
      const signature = headers[provider.signatureHeader]!
      for (const value of [signature.slice(0, Math.floor(signature.length / 2)), signature.slice(0, -1), signature.replace(/[0-9a-f]/i, '!'), `${signature}zz`, 'sha1=abc', ',,,', '=']) {
        const refusal = verify(provider.verifier(newSecret), { ...headers, [provider.signatureHeader]: value }, BODY)
        expect([value, refusedBy(refusal)]).toEqual([value, 'malformed-header'])
      }
    })

    it('each required header missing (or empty) is named', async () => {
      for (const name of provider.required) {
        for (const value of [undefined, '']) {
          const headers = await provider.sign(BODY, newSecret)
          delete headers[name]
          if (value !== undefined) headers[name] = value
          const refusal = verify(provider.verifier(newSecret), headers, BODY)
          expect(refusedBy(refusal)).toBe('missing-header')
          expect(refusal.status === 'refused' && refusal.detail.toLowerCase()).toContain(name.toLowerCase())
        }
      }
    })

    it("no refusal's detail shows a secret, a key or a signature (given or expected)", async () => {
      const signedNew = await provider.sign(BODY, newSecret)
      const signedOld = await provider.sign(BODY, oldSecret)
      const details: string[] = []
      const record = (verification: WebhookVerification) => verification.status === 'refused' && details.push(verification.detail)
      record(verify(provider.verifier(newSecret), signedOld, BODY))
      record(verify(provider.verifier(oldSecret), signedNew, `${BODY} `))
      record(verify(provider.verifier(newSecret), signedNew, BODY, at(SIGNED_AT + 10_000)))
      record(verify(provider.verifier(newSecret), { ...signedNew, [provider.signatureHeader]: signedNew[provider.signatureHeader]!.slice(0, -3) }, BODY))
      record(verify(provider.verifier(newSecret), {}, BODY))
      expect(details.length).toBeGreaterThanOrEqual(provider.window === undefined ? 4 : 5)
      for (const detail of details) {
        for (const forbidden of secretsAndSignatures(provider, [signedNew, signedOld])) expect(detail).not.toContain(forbidden)
      }
    })

    it('hostile headers and bodies never throw: every one is refused', () => {
      const verifier = provider.verifier(newSecret)
      const names = [...provider.required, provider.signatureHeader, 'x-github-delivery', 'x-shopify-webhook-id', 'x-shopify-event-id', 'webhook-id', 'svix-id']
      fc.assert(
        fc.property(fc.dictionary(fc.constantFrom(...names), fc.string({ unit: 'binary', maxLength: 200 })), fc.uint8Array({ maxLength: 300 }), fc.integer({ min: 0, max: 4_000_000_000 }), (headers, body, now) => {
          const verification = verifier.verify({ header: (name) => Object.entries(headers).find(([key]) => key.toLowerCase() === name)?.[1], body, now: () => now * 1000 })
          return verification.status === 'refused'
        }),
        { numRuns: 300 },
      )
    })
  })
}

/** Standard Webhooks, signed by the spec's reference library, its headers under the spec's names (`webhook`) or Svix's (`svix`). */
function standardWebhooks(prefix: 'webhook' | 'svix'): Provider {
  const [id, timestamp, signature] = [`${prefix}-id`, `${prefix}-timestamp`, `${prefix}-signature`]
  return {
    name: `Standard Webhooks as ${prefix}-* headers (signed by standardwebhooks 1.1.1)`,
    secrets: [whsec(), whsec()],
    verifier: (secret) => standardWebhooksSignature({ secret }),
    sign: async (payload, secret) => ({
      [id]: 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W',
      [timestamp]: String(SIGNED_AT),
      [signature]: new Webhook(secret).sign('msg_2KWPBgLlAfxdpx2AI54pPJ85f4W', new Date(SIGNED_AT * 1000), payload),
    }),
    eventId: 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W',
    signatureHeader: signature,
    required: [id, timestamp, signature],
    window: { header: timestamp, seconds: 300, set: (headers, value) => void (headers[timestamp] = value) },
    merge: (first, second) => `${first} ${second}`,
  }
}
