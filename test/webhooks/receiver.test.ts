// The webhook receiver with the built-in verifiers (issue 35), on every adapter: Fetch,
// Hono, Express 5 and 4, Fastify, NestJS on Express and on Fastify, each a real server
// on loopback, the inbox on Postgres. Deliveries are signed by each provider's own code:
// Stripe's SDK (`stripe.webhooks.generateTestHeaderString`), GitHub's
// `@octokit/webhooks-methods` (`sign`) and the Standard Webhooks library (`Webhook.sign`);
// Shopify and Slack publish no signing code, so theirs are signed with node:crypto as
// their docs describe (`shopifySign`, `slackSign` below).
// For each: a valid delivery is handled once and its repeat answered as a duplicate; a
// tampered body, a wrong secret and a stale timestamp (with an id never seen) are 401
// problem+json with nothing recorded; a body parser mounted first still verifies when the
// raw bytes are kept and fails loudly (500, nothing run) when they are not; a body with a
// BOM and invalid UTF-8 verifies; hostile headers and bodies never get a 5xx.
import { createHmac, randomBytes, randomUUID } from 'node:crypto'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { serve } from '@hono/node-server'
import { Controller, Inject, Module, Post, Req, Res, type DynamicModule, type INestApplication } from '@nestjs/common'
import { NestFactory } from '@nestjs/core'
import { ExpressAdapter } from '@nestjs/platform-express'
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify'
import { sign as githubSign } from '@octokit/webhooks-methods'
import express from 'express'
import express4 from 'express4'
import fastify from 'fastify'
import fc from 'fast-check'
import { Hono } from 'hono'
import { Webhook } from 'standardwebhooks'
import Stripe from 'stripe'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createEventStream, type IdemEvent } from '../../src/core/events.js'
import * as onExpress from '../../src/http/express.js'
import * as onFastify from '../../src/http/fastify.js'
import { webhookReceiver as onFetch } from '../../src/http/fetch/index.js'
import * as onHono from '../../src/http/hono.js'
import * as onNest from '../../src/http/nestjs.js'
import type { WebhookReceiverOptions } from '../../src/http/webhook.js'
import { githubSignature, shopifySignature, slackSignature, standardWebhooksSignature, stripeSignature, type WebhookSecrets, type WebhookVerifier } from '../../src/http/webhooks/index.js'
import { createInbox } from '../../src/queue/index.js'
import { postgresStore } from '../../src/stores/postgres/index.js'
import type { PgClient } from '../../src/stores/postgres/driver/types.js'
import { testSchema, type TestSchema } from '../support/postgres.js'

const db = await testSchema('idem_webhook_receiver')
afterAll(() => db?.drop())

const stripe = new Stripe('sk_test_not_used_for_calls')
const now = () => Math.floor(Date.now() / 1000)

/** A provider: its verifier under `secret`, and one signed delivery of a new event as its own code signs it. */
interface Provider {
  readonly name: 'stripe' | 'github' | 'standard-webhooks' | 'shopify' | 'slack'
  readonly secret: string
  readonly otherSecret: string
  /** A fresh secret of this provider's shape, never `secret` nor `otherSecret`. */
  newSecret(): string
  readonly verifier: (secret: WebhookSecrets) => WebhookVerifier
  /** The header that carries the signature (lower case). */
  readonly signatureHeader: string
  /** A new event: its id, its body, and headers signing `signed` (the body by default) at `timestamp`, with `secret`. */
  delivery(options?: { secret?: string; timestamp?: number; signed?: string }): Promise<{ id: string; body: string; headers: Record<string, string> }>
  /** Whether the scheme signs a timestamp, and so refuses one outside its window. */
  readonly signsTimestamp: boolean
}

/**
 * Shopify's signature, as https://shopify.dev/docs/apps/build/webhooks/subscribe/https
 * ("Verify a webhook") describes it: HMAC-SHA256 of the raw body under the app's client
 * secret, base64, in X-Shopify-Hmac-Sha256. Shopify publishes no signing code.
 */
const shopifySign = (secret: string, body: string): string => createHmac('sha256', secret).update(body, 'utf8').digest('base64')

/**
 * Slack's signature, as https://api.slack.com/authentication/verifying-requests-from-slack
 * describes it: the base string `v0:<X-Slack-Request-Timestamp>:<raw body>`, HMAC-SHA256
 * under the signing secret, hex, sent as `v0=<hex>` in X-Slack-Signature. Slack publishes
 * no signing code for it.
 */
const slackSign = (secret: string, timestamp: number, body: string): string => `v0=${createHmac('sha256', secret).update(`v0:${timestamp}:${body}`, 'utf8').digest('hex')}`

const whsec = () => `whsec_${randomBytes(24).toString('base64')}`
const stripeSecret = () => `whsec_${randomBytes(16).toString('hex')}`
const githubSecret = () => randomBytes(20).toString('hex')
/** A Shopify app's client secret: `shpss_` and 32 hex digits. */
const shopifySecret = () => `shpss_${randomBytes(16).toString('hex')}`
/** A Slack app's signing secret: 32 hex digits. */
const slackSecret = () => randomBytes(16).toString('hex')
const secrets = { stripe: stripeSecret(), github: githubSecret(), standard: whsec(), shopify: shopifySecret(), slack: slackSecret() }
const providers: readonly Provider[] = [
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
      return { id, body, headers: { 'x-hub-signature-256': await githubSign(secret, signed ?? body), 'x-github-delivery': id, 'x-github-event': 'push' } }
    },
  },
  {
    name: 'standard-webhooks',
    secret: secrets.standard,
    otherSecret: whsec(),
    newSecret: whsec,
    verifier: (secret) => standardWebhooksSignature({ secret }),
    signatureHeader: 'webhook-signature',
    signsTimestamp: true,
    async delivery({ secret = secrets.standard, timestamp = now(), signed } = {}) {
      const id = `msg_${randomBytes(12).toString('hex')}`
      const body = JSON.stringify({ type: 'user.created', data: { id: randomUUID() } })
      const signature = new Webhook(secret).sign(id, new Date(timestamp * 1000), signed ?? body)
      return { id, body, headers: { 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': signature } }
    },
  },
  {
    name: 'shopify',
    secret: secrets.shopify,
    otherSecret: shopifySecret(),
    newSecret: shopifySecret,
    verifier: (secret) => shopifySignature({ secret }),
    signatureHeader: 'x-shopify-hmac-sha256',
    signsTimestamp: false,
    async delivery({ secret = secrets.shopify, signed } = {}) {
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
        'x-shopify-webhook-id': id,
        'x-shopify-shop-domain': 'idem-test.myshopify.com',
        'x-shopify-api-version': '2025-01',
        'x-shopify-triggered-at': createdAt,
        'x-shopify-event-id': randomUUID(),
      }
      return { id, body, headers }
    },
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
  },
]

/** What a test reads of a server: where it listens, and how it stops. */
interface Running {
  readonly base: string
  close(): Promise<void>
}

/** How the receivers were mounted: alone, after a body parser that keeps the raw bytes, or after one that does not. */
type Mount = 'alone' | 'parser-keeps-bytes' | 'parser-drops-bytes'

/** One receiver to mount: its path, its inbox's consumer, and its options for whichever request type the adapter has. */
interface Mounted {
  readonly path: string
  readonly consumer: string
  options<R>(): WebhookReceiverOptions<PgClient, R>
}
type Receivers = readonly Mounted[]

interface Adapter {
  readonly name: string
  /** Mounts that are not "alone" which this framework has (Fetch has no body parsers). */
  readonly mounts: readonly Mount[]
  start(receivers: Receivers, mount: Mount): Promise<Running>
}

const listening = (server: Server): string => `http://127.0.0.1:${(server.address() as AddressInfo).port}`
const closing = (server: Server) => () => new Promise<void>((resolve) => server.close(() => resolve()))

function nodeServe(fetch: (request: Request) => Response | Promise<Response>): Promise<Running> {
  return new Promise((resolve) => {
    const server = serve({ fetch, port: 0, hostname: '127.0.0.1' }, () => resolve({ base: listening(server as Server), close: closing(server as Server) }))
  })
}

function expressAdapter(name: string, framework: typeof express): Adapter {
  return {
    name,
    mounts: ['parser-keeps-bytes', 'parser-drops-bytes'],
    async start(receivers, mount) {
      const app = framework()
      if (mount === 'parser-keeps-bytes') app.use(framework.json({ verify: (req, _res, buf) => void Object.assign(req, { rawBody: buf }) }))
      if (mount === 'parser-drops-bytes') app.use(framework.json())
      for (const { path, options } of receivers) app.post(path, onExpress.webhookReceiver(options()))
      // Express's error handling: the InvalidOptionError of a body whose bytes are gone.
      app.use((error: Error, _req: express.Request, res: express.Response, _next: express.NextFunction) => void res.status(500).json({ error: error.message }))
      const server = await new Promise<Server>((resolve) => {
        const started: Server = app.listen(0, '127.0.0.1', () => resolve(started))
      })
      return { base: listening(server), close: closing(server) }
    },
  }
}

const RECEIVERS = 'receivers'
@Controller('webhooks')
class WebhooksController {
  private readonly receive: Map<string, (req: onNest.NestRequest, res: unknown) => Promise<void>>
  constructor(@Inject(RECEIVERS) receivers: Receivers) {
    this.receive = new Map(receivers.map(({ path, options }) => [path, onNest.webhookReceiver(options())]))
  }
  @Post(':provider')
  webhook(@Req() req: onNest.NestRequest, @Res() res: unknown) {
    return this.receive.get(req.url.split('?')[0]!)!(req, res)
  }
}
@Module({})
class WebhooksModule {
  static with(receivers: Receivers): DynamicModule {
    return { module: WebhooksModule, controllers: [WebhooksController], providers: [{ provide: RECEIVERS, useValue: receivers }] }
  }
}

function nestAdapter(platform: 'express' | 'fastify'): Adapter {
  return {
    name: `NestJS (${platform})`,
    // Nest's default body parser is always first: rawBody keeps the bytes, or not.
    mounts: ['parser-keeps-bytes', 'parser-drops-bytes'],
    async start(receivers, mount) {
      const options = { rawBody: mount !== 'parser-drops-bytes', logger: false as const }
      let app: INestApplication
      if (platform === 'express') app = await NestFactory.create(WebhooksModule.with(receivers), new ExpressAdapter(), options)
      else {
        const onFastifyPlatform = await NestFactory.create<NestFastifyApplication>(WebhooksModule.with(receivers), new FastifyAdapter(), options)
        // Nest on Fastify keeps rawBody for JSON and forms; registering a type replaces those defaults, so JSON is named again.
        if (options.rawBody) onFastifyPlatform.useBodyParser(['application/json', 'text/plain'])
        app = onFastifyPlatform
      }
      await app.listen(0, '127.0.0.1')
      return { base: listening(app.getHttpServer() as Server), close: () => app.close() }
    },
  }
}

const adapters: readonly Adapter[] = [
  {
    name: 'Fetch',
    mounts: [],
    start(receivers) {
      const routes = new Map(receivers.map(({ path, options }) => [path, onFetch(options())]))
      return nodeServe((request) => routes.get(new URL(request.url).pathname)!(request))
    },
  },
  {
    name: 'Hono',
    mounts: ['parser-keeps-bytes', 'parser-drops-bytes'],
    start(receivers, mount) {
      const app = new Hono()
      // An earlier middleware that reads the body: as bytes (kept in Hono's cache), or as JSON.
      if (mount === 'parser-keeps-bytes') app.use(async (c, next) => void (await c.req.arrayBuffer(), await next()))
      if (mount === 'parser-drops-bytes') app.use(async (c, next) => void (await c.req.json().catch(() => undefined), await next()))
      for (const { path, options } of receivers) app.post(path, onHono.webhookReceiver(options()))
      app.onError((error, c) => c.json({ error: error.message }, 500))
      return nodeServe(app.fetch)
    },
  },
  expressAdapter('Express 5', express),
  expressAdapter('Express 4', express4 as unknown as typeof express),
  {
    name: 'Fastify',
    mounts: ['parser-keeps-bytes', 'parser-drops-bytes'],
    async start(receivers, mount) {
      const app = fastify()
      await app.register(async (webhooks) => {
        if (mount !== 'parser-drops-bytes') {
          webhooks.removeAllContentTypeParsers()
          webhooks.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body))
        }
        for (const { path, options } of receivers) webhooks.post(path, onFastify.webhookReceiver(options()))
      })
      app.setErrorHandler((error, _request, reply) => void reply.code(500).send({ error: (error as Error).message }))
      await app.listen({ port: 0, host: '127.0.0.1' })
      return { base: listening(app.server), close: () => app.close() }
    },
  },
  nestAdapter('express'),
  nestAdapter('fastify'),
]

describe.skipIf(db === undefined)('webhookReceiver with built-in verifiers, on every adapter (inbox on Postgres)', () => {
  const { pool, schema } = db as TestSchema
  const store = postgresStore({ pool, schema })
  const handled = `"${schema}".handled`
  beforeAll(async () => {
    await store.migrate()
    await pool.query(`CREATE TABLE ${handled} (consumer text NOT NULL, event_id text NOT NULL)`)
  })
  /** Times the handler ran for `id`, by the rows it wrote, and whether the inbox recorded it. */
  const runsOf = async (consumer: string, id: string) => (await pool.query(`SELECT count(*)::int AS n FROM ${handled} WHERE consumer = $1 AND event_id = $2`, [consumer, id])).rows[0].n as number
  const recorded = async (consumer: string) => (await pool.query(`SELECT count(*)::int AS n FROM "${schema}".idem_inbox WHERE consumer = $1`, [consumer])).rows[0].n as number

  function receivers(adapter: string, mount: Mount): Receivers {
    return providers.map((provider) => {
      const consumer = `${adapter}-${mount}-${provider.name}-${randomBytes(3).toString('hex')}`
      const inbox = createInbox({ store, consumer })
      const verify = provider.verifier(provider.secret)
      return {
        path: `/webhooks/${provider.name}`,
        consumer,
        options: () => ({
          inbox,
          verify,
          handler: async (tx, event) => {
            await tx.query(`INSERT INTO ${handled} (consumer, event_id) VALUES ($1, $2)`, [consumer, event.id])
          },
        }),
      }
    })
  }
  const consumerOf = (receivers: Receivers, provider: Provider) => receivers.find(({ path }) => path.endsWith(provider.name))!.consumer

  const post = (base: string, provider: Provider, body: string | Uint8Array, headers: Record<string, string>) =>
    fetch(`${base}/webhooks/${provider.name}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body })

  async function expectRefused(response: Response, check: string, secret: string): Promise<void> {
    expect(response.status).toBe(401)
    expect(response.headers.get('content-type')).toBe('application/problem+json')
    const text = await response.text()
    const problem = JSON.parse(text) as { code: string; check: string; detail: string }
    expect(problem.code).toBe('invalid-signature')
    expect(problem.check).toBe(check)
    expect(text).not.toContain(secret)
    expect(text).not.toContain(secret.replace(/^whsec_/, ''))
  }

  it('reports each delivery on the event stream: verified and processed, verified and duplicate, refused with its check', async () => {
    const events = createEventStream()
    const seen: IdemEvent[] = []
    events.subscribe((event) => void (event.type === 'webhook' && seen.push(event)))
    const provider = providers[0]!
    const consumer = `events-${randomBytes(3).toString('hex')}`
    const receive = onFetch({ inbox: createInbox({ store, consumer }), verify: provider.verifier(provider.secret), handler: () => {}, events })
    const valid = await provider.delivery()
    const request = (body: string) => new Request('http://localhost/webhooks', { method: 'POST', headers: valid.headers, body })
    await receive(request(valid.body))
    await receive(request(valid.body))
    await receive(request(`${valid.body} `))
    expect(seen).toEqual([
      { type: 'webhook', consumer, scheme: 'stripe', signature: 'verified', status: 'processed' },
      { type: 'webhook', consumer, scheme: 'stripe', signature: 'verified', status: 'duplicate' },
      { type: 'webhook', consumer, scheme: 'stripe', signature: 'refused', status: 'refused', check: 'no-matching-signature' },
    ])
  })

  for (const provider of providers) {
    it(`${provider.name}: while a secret is rotated, deliveries signed with the old or the new one are handled once each, a third secret is 401 and recorded nowhere`, async () => {
      const consumer = `rotation-${provider.name}-${randomBytes(3).toString('hex')}`
      const rotated = provider.verifier([provider.secret, provider.otherSecret])
      const receive = onFetch({ inbox: createInbox({ store, consumer }), verify: rotated, handler: async (tx, event) => void (await tx.query(`INSERT INTO ${handled} (consumer, event_id) VALUES ($1, $2)`, [consumer, event.id])) })
      const request = ({ body, headers }: { body: string; headers: Record<string, string> }) => new Request('http://localhost/webhooks', { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body })
      const byOld = await provider.delivery({ secret: provider.secret })
      const byNew = await provider.delivery({ secret: provider.otherSecret })
      for (const delivery of [byOld, byNew, byOld, byNew]) expect((await receive(request(delivery))).status).toBe(200)
      expect(await runsOf(consumer, byOld.id)).toBe(1)
      expect(await runsOf(consumer, byNew.id)).toBe(1)
      const byThird = await provider.delivery({ secret: provider.newSecret() })
      const refusedResponse = await receive(request(byThird))
      expect(refusedResponse.status).toBe(401)
      expect(await runsOf(consumer, byThird.id)).toBe(0)
      expect(await recorded(consumer)).toBe(2)
    })
  }

  for (const adapter of adapters) {
    describe(adapter.name, () => {
      let server: Running
      let mounted: Receivers
      beforeAll(async () => {
        mounted = receivers(adapter.name, 'alone')
        server = await adapter.start(mounted, 'alone')
        return () => server.close()
      })

      for (const provider of providers) {
        it(`${provider.name}: a valid delivery is handled once, its repeat answered as a duplicate; tampered, wrong-secret and stale ones are 401 and recorded nowhere`, async () => {
          const consumer = consumerOf(mounted, provider)
          const valid = await provider.delivery()
          const first = await post(server.base, provider, valid.body, valid.headers)
          expect(first.status).toBe(200)
          expect(await first.json()).toEqual({ received: true, id: valid.id })
          const again = await post(server.base, provider, valid.body, valid.headers)
          expect(again.status).toBe(200)
          expect(again.headers.get('idempotent-replayed')).toBe('true')
          expect(await runsOf(consumer, valid.id)).toBe(1)
          const before = await recorded(consumer)

          const tampered = await provider.delivery()
          await expectRefused(await post(server.base, provider, tampered.body.replace('"', '"x'), tampered.headers), 'no-matching-signature', provider.secret)
          const forged = await provider.delivery({ secret: provider.otherSecret })
          await expectRefused(await post(server.base, provider, forged.body, forged.headers), 'no-matching-signature', provider.secret)
          if (provider.signsTimestamp) {
            // A new event id, validly signed ten minutes ago: a replay the inbox has never seen.
            const stale = await provider.delivery({ timestamp: now() - 600 })
            await expectRefused(await post(server.base, provider, stale.body, stale.headers), 'stale-timestamp', provider.secret)
            expect(await runsOf(consumer, stale.id)).toBe(0)
            const future = await provider.delivery({ timestamp: now() + 600 })
            await expectRefused(await post(server.base, provider, future.body, future.headers), 'future-timestamp', provider.secret)
            expect(await runsOf(consumer, future.id)).toBe(0)
          }
          // The signature header cut short, as a proxy that truncates long headers would.
          const cut = await provider.delivery()
          const value = cut.headers[provider.signatureHeader]!
          const truncated = await post(server.base, provider, cut.body, { ...cut.headers, [provider.signatureHeader]: value.slice(0, Math.floor(value.length / 2)) })
          expect(truncated.status).toBe(401)
          expect(await runsOf(consumer, cut.id)).toBe(0)
          expect(await recorded(consumer)).toBe(before)
          expect(await runsOf(consumer, tampered.id)).toBe(0)
          expect(await runsOf(consumer, forged.id)).toBe(0)
        })
      }

      it('verifies the bytes as they arrived: a body with a BOM and invalid UTF-8 (Standard Webhooks)', async () => {
        const provider = providers.find(({ name }) => name === 'standard-webhooks')!
        const bytes = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"note":"'), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from('"}')])
        const id = `msg_${randomBytes(12).toString('hex')}`
        const timestamp = now()
        // The library signs text; latin1 text maps each byte to one code unit, which it
        // encodes as UTF-8, so the HMAC is computed here over the same bytes instead.
        const { createHmac } = await import('node:crypto')
        const key = Buffer.from(provider.secret.slice('whsec_'.length), 'base64')
        const signature = createHmac('sha256', key).update(`${id}.${timestamp}.`).update(bytes).digest('base64')
        const response = await post(server.base, provider, bytes, { 'content-type': 'text/plain', 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': `v1,${signature}` })
        expect(response.status).toBe(200)
        expect(await runsOf(consumerOf(mounted, provider), id)).toBe(1)
      })

      it('never answers 5xx nor runs the handler for hostile signature headers and bodies (fuzz)', async () => {
        const printable = fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((code) => String.fromCharCode(code)), maxLength: 200 })
        const field = fc.oneof(printable, fc.constantFrom('', 't=', 'v1=', 'sha256=', 'v1,', 'v0=', 'whsec_', 't=1,v1=' + 'a'.repeat(64), `t=${now()},v1=${'0'.repeat(64)}`, 'v1,' + 'A'.repeat(43) + '=', 'A'.repeat(43) + '=', `v0=${'0'.repeat(64)}`, String(now())))
        const consumers = providers.map((provider) => consumerOf(mounted, provider))
        const before = await Promise.all(consumers.map(recorded))
        await fc.assert(
          fc.asyncProperty(
            fc.constantFrom(...providers),
            fc.dictionary(fc.constantFrom('stripe-signature', 'x-hub-signature-256', 'x-github-delivery', 'webhook-id', 'webhook-timestamp', 'webhook-signature', 'x-shopify-hmac-sha256', 'x-shopify-webhook-id', 'x-slack-signature', 'x-slack-request-timestamp'), field),
            fc.oneof(printable, fc.uint8Array({ maxLength: 300 })),
            async (provider, headers, body) => {
              const response = await post(server.base, provider, body, headers)
              await response.arrayBuffer()
              // 401 from the receiver, or 4xx from a framework that refuses the body before it (415, a JSON parse error).
              expect(response.status).toBeGreaterThanOrEqual(400)
              expect(response.status).toBeLessThan(500)
            },
          ),
          { numRuns: 40 },
        )
        expect(await Promise.all(consumers.map(recorded))).toEqual(before)
      })

      for (const mount of adapter.mounts) {
        it(mount === 'parser-keeps-bytes' ? 'a body parser mounted first that keeps the raw bytes: still verifies, once' : 'a body parser mounted first that drops the raw bytes: fails loudly (500 naming the fix), runs nothing', async () => {
          const after = receivers(adapter.name, mount)
          const running = await adapter.start(after, mount)
          try {
            for (const provider of providers) {
              const consumer = consumerOf(after, provider)
              const valid = await provider.delivery()
              const response = await post(running.base, provider, valid.body, valid.headers)
              if (mount === 'parser-keeps-bytes') {
                expect(response.status).toBe(200)
                expect((await post(running.base, provider, valid.body, valid.headers)).headers.get('idempotent-replayed')).toBe('true')
                expect(await runsOf(consumer, valid.id)).toBe(1)
              } else {
                expect(response.status).toBe(500)
                // Nest's exception filter hides the message; the others show what to do.
                if (!adapter.name.startsWith('NestJS')) expect(await response.text()).toMatch(/raw bytes were not kept/)
                expect(await runsOf(consumer, valid.id)).toBe(0)
                expect(await recorded(consumer)).toBe(0)
              }
            }
          } finally {
            await running.close()
          }
        })
      }
    })
  }
})
