// The providers the webhook tests deliver as: each one's verifier and a new delivery of
// one event, signed by the provider's own code: Stripe's SDK
// (`stripe.webhooks.generateTestHeaderString`), GitHub's `@octokit/webhooks-methods`
// (`sign`) and the Standard Webhooks library (`Webhook.sign`), whose deliveries go out
// under the spec's `webhook-*` names and under Svix's `svix-*` ones (what Clerk's and
// Resend's docs verify; svix 2.x itself needs Node 22). Shopify and Slack publish no
// signing code, so theirs are signed with node:crypto as their docs describe
// (`shopifySign`, `slackSign`).
import { createHmac, randomBytes, randomUUID } from 'node:crypto'
import { sign as githubSign } from '@octokit/webhooks-methods'
import { Webhook } from 'standardwebhooks'
import Stripe from 'stripe'
import { githubSignature, shopifySignature, slackSignature, standardWebhooksSignature, stripeSignature, type WebhookSecrets, type WebhookVerifier } from '../../../src/http/webhooks/index.js'

const stripe = new Stripe('sk_test_not_used_for_calls')
export const now = () => Math.floor(Date.now() / 1000)

/** A provider: its verifier under `secret`, and one signed delivery of a new event as its own code signs it. */
export interface Provider {
  readonly name: 'stripe' | 'github' | 'standard-webhooks' | 'svix' | 'shopify' | 'slack'
  readonly secret: string
  readonly otherSecret: string
  /** A fresh secret of this provider's shape, never `secret` nor `otherSecret`. */
  newSecret(): string
  readonly verifier: (secret: WebhookSecrets) => WebhookVerifier
  /** The header that carries the signature (lower case). */
  readonly signatureHeader: string
  /** A new event: its id, its body, and headers signing `signed` (the body by default) at `timestamp`, with `secret`. */
  delivery(options?: { secret?: string; timestamp?: number; signed?: string }): Promise<Delivery>
  /** Whether the scheme signs a timestamp, and so refuses one outside its window. */
  readonly signsTimestamp: boolean
  /**
   * The headers of the same event sent again as the provider sends it again (signed with
   * `secret`): a retry signed anew a second earlier where a timestamp is signed, another
   * webhook's or subscription's copy where the provider has several.
   */
  again(delivery: Delivery): Promise<Record<string, string>>
}

/** One delivery: the event id the receiver should record, the body and the headers. */
export interface Delivery {
  readonly id: string
  readonly body: string
  readonly headers: Record<string, string>
}

/**
 * Shopify's signature, as https://shopify.dev/docs/apps/build/webhooks/subscribe/https
 * ("Verify a webhook") describes it: HMAC-SHA256 of the raw body under the app's client
 * secret, base64, in X-Shopify-Hmac-Sha256. Shopify publishes no signing code.
 */
export const shopifySign = (secret: string, body: string): string => createHmac('sha256', secret).update(body, 'utf8').digest('base64')

/**
 * Slack's signature, as https://api.slack.com/authentication/verifying-requests-from-slack
 * describes it: the base string `v0:<X-Slack-Request-Timestamp>:<raw body>`, HMAC-SHA256
 * under the signing secret, hex, sent as `v0=<hex>` in X-Slack-Signature. Slack publishes
 * no signing code for it.
 */
export const slackSign = (secret: string, timestamp: number, body: string): string => `v0=${createHmac('sha256', secret).update(`v0:${timestamp}:${body}`, 'utf8').digest('hex')}`

const whsec = () => `whsec_${randomBytes(24).toString('base64')}`
const stripeSecret = () => `whsec_${randomBytes(16).toString('hex')}`
const githubSecret = () => randomBytes(20).toString('hex')
/** A Shopify app's client secret: `shpss_` and 32 hex digits. */
const shopifySecret = () => `shpss_${randomBytes(16).toString('hex')}`
/** A Slack app's signing secret: 32 hex digits. */
const slackSecret = () => randomBytes(16).toString('hex')
const secrets = { stripe: stripeSecret(), github: githubSecret(), standard: whsec(), shopify: shopifySecret(), slack: slackSecret() }
export const providers: readonly Provider[] = [
  {
    name: 'stripe',
    secret: secrets.stripe,
    otherSecret: stripeSecret(),
    newSecret: stripeSecret,
    verifier: (secret) => stripeSignature({ secret }),
    signatureHeader: 'stripe-signature',
    signsTimestamp: true,
    async delivery({ secret = secrets.stripe, timestamp = now(), signed } = {}) {
      const id = `evt_${randomBytes(12).toString('hex')}`
      const body = JSON.stringify({ id, object: 'event', type: 'payment_intent.succeeded' })
      return { id, body, headers: { 'stripe-signature': stripe.webhooks.generateTestHeaderString({ payload: signed ?? body, secret, timestamp }) } }
    },
    // Stripe retries an event with its evt_ id, signed at the time of the retry.
    again: async ({ body }) => ({ 'stripe-signature': stripe.webhooks.generateTestHeaderString({ payload: body, secret: secrets.stripe, timestamp: now() - 1 }) }),
  },
  {
    name: 'github',
    secret: secrets.github,
    otherSecret: githubSecret(),
    newSecret: githubSecret,
    verifier: (secret) => githubSignature({ secret }),
    signatureHeader: 'x-hub-signature-256',
    signsTimestamp: false,
    async delivery({ secret = secrets.github, signed } = {}) {
      const id = randomUUID()
      const body = JSON.stringify({ ref: 'refs/heads/main', after: randomBytes(20).toString('hex') })
      return { id, body, headers: { 'x-hub-signature-256': await githubSign(secret, signed ?? body), 'x-github-delivery': id, 'x-github-event': 'push', 'x-github-hook-id': '292430182' } }
    },
    // X-GitHub-Delivery names the event: a redelivery keeps it, and so does another webhook's delivery of it.
    again: async ({ headers }) => ({ ...headers, 'x-github-hook-id': '292430183' }),
  },
  standardWebhooks('standard-webhooks', 'webhook'),
  // Svix's branded names, as Svix (and so Clerk and Resend) send them: the same scheme.
  standardWebhooks('svix', 'svix'),
  {
    name: 'shopify',
    secret: secrets.shopify,
    otherSecret: shopifySecret(),
    newSecret: shopifySecret,
    verifier: (secret) => shopifySignature({ secret }),
    signatureHeader: 'x-shopify-hmac-sha256',
    signsTimestamp: false,
    async delivery({ secret = secrets.shopify, signed } = {}) {
      // The event id, what Shopify documents as marking a duplicate; each subscription's
      // delivery of it has its own X-Shopify-Webhook-Id.
      const id = randomUUID()
      const order = 5_000_000_000_000 + randomBytes(4).readUInt32BE()
      const createdAt = new Date().toISOString()
      // An orders/create payload, abridged: the order, its customer and one line item.
      const body = JSON.stringify({
        id: order,
        admin_graphql_api_id: `gid://shopify/Order/${order}`,
        name: `#${1000 + (order % 9000)}`,
        email: 'jon@example.com',
        created_at: createdAt,
        currency: 'USD',
        financial_status: 'paid',
        total_price: '199.00',
        customer: { id: 6_000_000_000_000 + (order % 1000), email: 'jon@example.com', first_name: 'Jon', last_name: 'Doe' },
        line_items: [{ id: order + 1, product_id: 7_000_000_000_000, title: 'IPod Nano - 8GB', quantity: 1, price: '199.00', sku: 'IPOD2008PINK' }],
      })
      const headers = {
        'x-shopify-hmac-sha256': shopifySign(secret, signed ?? body),
        'x-shopify-topic': 'orders/create',
        'x-shopify-webhook-id': randomUUID(),
        'x-shopify-shop-domain': 'idem-test.myshopify.com',
        'x-shopify-api-version': '2025-01',
        'x-shopify-triggered-at': createdAt,
        'x-shopify-event-id': id,
      }
      return { id, body, headers }
    },
    // Another subscription to the topic: its own X-Shopify-Webhook-Id, the same event id.
    again: async ({ headers }) => ({ ...headers, 'x-shopify-webhook-id': randomUUID() }),
  },
  {
    name: 'slack',
    secret: secrets.slack,
    otherSecret: slackSecret(),
    newSecret: slackSecret,
    verifier: (secret) => slackSignature({ secret }),
    signatureHeader: 'x-slack-signature',
    signsTimestamp: true,
    async delivery({ secret = secrets.slack, timestamp = now(), signed } = {}) {
      const id = `Ev${randomBytes(5).toString('hex').toUpperCase()}`
      // An Events API event_callback: a message posted in a channel the app is in.
      const body = JSON.stringify({
        token: 'XXYYZZ',
        team_id: 'T0123ABCD',
        api_app_id: 'A0123ABCD',
        event: { type: 'message', channel: 'C0123ABCD', user: 'U0123ABCD', text: 'Deploy finished', ts: `${timestamp}.000100`, event_ts: `${timestamp}.000100`, channel_type: 'channel' },
        type: 'event_callback',
        event_id: id,
        event_time: timestamp,
        authorizations: [{ enterprise_id: null, team_id: 'T0123ABCD', user_id: 'U0APPBOT', is_bot: true, is_enterprise_install: false }],
        is_ext_shared_channel: false,
      })
      return { id, body, headers: { 'x-slack-signature': slackSign(secret, timestamp, signed ?? body), 'x-slack-request-timestamp': String(timestamp) } }
    },
    // Slack retries an event with its event_id, signed anew, saying which retry it is.
    async again({ body }) {
      const timestamp = now() - 1
      return { 'x-slack-signature': slackSign(secrets.slack, timestamp, body), 'x-slack-request-timestamp': String(timestamp), 'x-slack-retry-num': '1', 'x-slack-retry-reason': 'http_timeout' }
    },
  },
]


/**
 * A Standard Webhooks sender, signing with the spec's reference library and sending the
 * three headers under `prefix`: the spec's `webhook-*`, or Svix's `svix-*`.
 */
function standardWebhooks(name: 'standard-webhooks' | 'svix', prefix: 'webhook' | 'svix'): Provider {
  return {
    name,
    secret: secrets.standard,
    otherSecret: whsec(),
    newSecret: whsec,
    verifier: (secret) => standardWebhooksSignature({ secret }),
    signatureHeader: `${prefix}-signature`,
    signsTimestamp: true,
    async delivery({ secret = secrets.standard, timestamp = now(), signed } = {}) {
      const id = `msg_${randomBytes(12).toString('hex')}`
      const body = JSON.stringify({ type: 'user.created', data: { id: randomUUID() } })
      const signature = new Webhook(secret).sign(id, new Date(timestamp * 1000), signed ?? body)
      return { id, body, headers: headersOf(prefix, id, timestamp, signature) }
    },
    // A retry keeps the message id and is signed at the time of the attempt.
    async again({ id, body }) {
      const timestamp = now() - 1
      return headersOf(prefix, id, timestamp, new Webhook(secrets.standard).sign(id, new Date(timestamp * 1000), body))
    },
  }
}

function headersOf(prefix: 'webhook' | 'svix', id: string, timestamp: number, signature: string): Record<string, string> {
  return { [`${prefix}-id`]: id, [`${prefix}-timestamp`]: String(timestamp), [`${prefix}-signature`]: signature }
}
