// Where each verifier reads the event id, and what else a verified delivery can be: the
// Standard Webhooks headers under the spec's names or Svix's (what Clerk's and Resend's
// docs verify), signed by the spec's reference library; Shopify's event id over its
// delivery id; Slack's signed url_verification, a handshake and not an event.
import { createHmac, randomBytes } from 'node:crypto'
import type { IncomingHttpHeaders } from 'node:http'
import { Webhook } from 'standardwebhooks'
import Stripe from 'stripe'
import { describe, expect, it } from 'vitest'
import { shopifySignature, slackSignature, standardWebhooksSignature, stripeSignature } from '../../src/http/webhooks/index.js'
import { BODY, SIGNED_AT, at, refusedBy, verify, whsec } from './support/verify.js'

const stripe = new Stripe('sk_test_not_used_for_calls')

describe('event ids', () => {
  it('Stripe: only an evt_ id is an event id; a verified body without one gives none', () => {
    const secret = `whsec_${randomBytes(16).toString('hex')}`
    for (const [body, id] of [['{"id":"evt_123"}', 'evt_123'], ['{"id":"pi_123"}', undefined], ['not json', undefined], ['["evt_1"]', undefined]] as const) {
      const header = stripe.webhooks.generateTestHeaderString({ payload: body, secret, timestamp: SIGNED_AT })
      expect(verify(stripeSignature({ secret }), { 'stripe-signature': header }, body)).toEqual({ status: 'verified', eventId: id })
    }
  })

  it('Standard Webhooks signs its id: the same signature under another webhook-id is refused', async () => {
    const secret = whsec()
    const signature = new Webhook(secret).sign('msg_1', new Date(SIGNED_AT * 1000), BODY)
    const headers = { 'webhook-id': 'msg_2', 'webhook-timestamp': String(SIGNED_AT), 'webhook-signature': signature }
    expect(refusedBy(verify(standardWebhooksSignature({ secret }), headers, BODY))).toBe('no-matching-signature')
  })

  it("Node's header lookup fits as it is: repeated Stripe-Signature field lines are combined, as HTTP combines them", () => {
    const secret = `whsec_${randomBytes(16).toString('hex')}`
    const [timestamp, signature] = stripe.webhooks.generateTestHeaderString({ payload: BODY, secret, timestamp: SIGNED_AT }).split(',')
    const headers: IncomingHttpHeaders = { 'stripe-signature': [timestamp!, signature!] }
    const verification = stripeSignature({ secret }).verify({ header: (name) => headers[name], body: new TextEncoder().encode(BODY), now: at(SIGNED_AT) })
    expect(verification.status).toBe('verified')
  })

  it('a body that is not UTF-8 is verified over its bytes as they came', () => {
    const secret = 'shpss_0123456789abcdef'
    const body = Uint8Array.of(0xff, 0xfe, 0x00, 0x7b)
    const header = createHmac('sha256', secret).update(body).digest('base64')
    const verification = shopifySignature({ secret }).verify({ header: (name) => (name === 'x-shopify-hmac-sha256' ? header : undefined), body })
    expect(verification).toEqual({ status: 'verified', eventId: undefined })
  })
})

describe("Standard Webhooks under the spec's names or Svix's, as Svix's library reads them", () => {
  const secret = whsec()
  const verifier = standardWebhooksSignature({ secret })
  const signed = (prefix: 'webhook' | 'svix', id = 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W') => ({
    [`${prefix}-id`]: id,
    [`${prefix}-timestamp`]: String(SIGNED_AT),
    [`${prefix}-signature`]: new Webhook(secret).sign(id, new Date(SIGNED_AT * 1000), BODY),
  })

  it('svix-id, svix-timestamp and svix-signature verify, the event id being svix-id; so do both families sent together', () => {
    expect(verify(verifier, signed('svix'), BODY)).toEqual({ status: 'verified', eventId: 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W' })
    expect(verify(verifier, { ...signed('webhook'), ...signed('svix') }, BODY)).toEqual({ status: 'verified', eventId: 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W' })
  })

  it('svix-signature covers svix-id: the same signature under another svix-id is refused', () => {
    const headers = { ...signed('svix'), 'svix-id': 'msg_other' }
    expect(refusedBy(verify(verifier, headers, BODY))).toBe('no-matching-signature')
  })

  it('the families are never mixed: a svix-* set missing one header is refused naming it, even with that header under the spec name', () => {
    const { 'svix-timestamp': _dropped, ...svix } = signed('svix')
    const refusal = verify(verifier, { ...svix, 'webhook-timestamp': String(SIGNED_AT) }, BODY)
    expect(refusedBy(refusal)).toBe('missing-header')
    expect(refusal.status === 'refused' && refusal.detail).toBe('The svix-timestamp header is missing')
  })

  it("with no header of either family, the spec's names are the ones asked for", () => {
    const refusal = verify(verifier, {}, BODY)
    expect(refusal.status === 'refused' && refusal.detail).toBe('The webhook-id header is missing')
  })
})

describe('Shopify: the event id is X-Shopify-Event-Id, what Shopify documents as marking a duplicate', () => {
  const secret = 'shpss_5f1c0ffee0d15ea5e'
  const hmac = createHmac('sha256', secret).update(BODY, 'utf8').digest('base64')
  const verifier = shopifySignature({ secret })

  it('two subscriptions delivering one event: two X-Shopify-Webhook-Ids, one event id', () => {
    for (const webhookId of ['b54557e4-bdd9-4b37-8a5f-bf7d70bcd043', '0f1e2d3c-4b5a-4978-8a6b-5c4d3e2f1a0b']) {
      const headers = { 'x-shopify-hmac-sha256': hmac, 'x-shopify-webhook-id': webhookId, 'x-shopify-event-id': '98880550-7158-44d4-b7cd-2c97c8a091b5' }
      expect(verify(verifier, headers, BODY)).toEqual({ status: 'verified', eventId: '98880550-7158-44d4-b7cd-2c97c8a091b5' })
    }
  })

  it('a delivery without X-Shopify-Event-Id falls back to X-Shopify-Webhook-Id, which its retries keep', () => {
    const headers = { 'x-shopify-hmac-sha256': hmac, 'x-shopify-webhook-id': 'b54557e4-bdd9-4b37-8a5f-bf7d70bcd043' }
    expect(verify(verifier, headers, BODY)).toEqual({ status: 'verified', eventId: 'b54557e4-bdd9-4b37-8a5f-bf7d70bcd043' })
  })
})

describe("Slack's url_verification: a signed handshake, answered with its challenge, never an event", () => {
  const secret = randomBytes(16).toString('hex')
  const verifier = slackSignature({ secret })
  const signedAt = (body: string, timestamp = SIGNED_AT) => ({
    'x-slack-request-timestamp': String(timestamp),
    'x-slack-signature': `v0=${createHmac('sha256', secret).update(`v0:${timestamp}:${body}`, 'utf8').digest('hex')}`,
  })
  const challenge = JSON.stringify({ token: 'Jhj5dZrVaK7ZwHHjRyZWjbDl', challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P', type: 'url_verification' })

  it('signed: a handshake whose reply is the challenge', () => {
    expect(verify(verifier, signedAt(challenge), challenge)).toEqual({
      status: 'handshake',
      reply: { contentType: 'application/json', body: '{"challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}' },
    })
  })

  it('forged, tampered or replayed later: refused like any request, so no challenge is echoed', () => {
    expect(refusedBy(verify(verifier, {}, challenge))).toBe('missing-header')
    expect(refusedBy(verify(verifier, signedAt(challenge), challenge.replace('3eZb', 'XXXX')))).toBe('no-matching-signature')
    expect(refusedBy(verify(verifier, signedAt(challenge), challenge, at(SIGNED_AT + 600)))).toBe('stale-timestamp')
  })

  it('only a url_verification with a challenge is one: an event that carries a "challenge" field is an event', () => {
    const event = JSON.stringify({ type: 'event_callback', event_id: 'Ev0PV52K25', challenge: 'x', event: { type: 'message' } })
    expect(verify(verifier, signedAt(event), event)).toEqual({ status: 'verified', eventId: 'Ev0PV52K25' })
    const empty = JSON.stringify({ type: 'url_verification', challenge: '' })
    expect(verify(verifier, signedAt(empty), empty)).toEqual({ status: 'verified', eventId: undefined })
  })
})
