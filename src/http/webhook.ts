import { BodyTooLargeError } from './body-too-large.js'
import { IdemError } from '../core/errors/idem-error.js'
import { InvalidOptionError } from '../core/errors/invalid-option.js'
import { idemEvents, type EventStream } from '../core/events.js'
import type { WebhookReceiverEvent } from './events.js'
import { assertCount, assertKnownOptions, optionNames } from '../core/validate.js'
import type { Inbox } from '../queue/inbox.js'
import type { HttpAnswer, HttpRequest } from './exchange.js'
import { problemAnswer, problemCodeAnswer, type ProblemCode, type ProblemTypes } from './problem.js'
import type { WebhookVerifier } from './webhooks/verifier.js'
import { webRequest, webResponse } from './web.js'

/** Where a provider puts its event id, when `verify` is not a built-in verifier that reads it. */
export type WebhookEventId<R = Request> =
  /** Stripe: the `evt_…` id in the JSON body. */
  | 'stripe'
  /** GitHub: the `X-GitHub-Delivery` header (the same on GitHub's redeliveries). */
  | 'github'
  /** Anything else: a function of the framework's request and the raw body bytes. */
  | ((request: R, rawBody: Uint8Array) => string | undefined | Promise<string | undefined>)

/**
 * How a delivery's signature is checked, on the raw body bytes before anything is parsed
 * or recorded: a built-in verifier from `idem/webhooks` (`stripeSignature({ secret })`,
 * …), or a function of the framework's request and the raw bytes (false answers 401).
 */
export type WebhookVerify<R = Request> = WebhookVerifier | ((request: R, rawBody: Uint8Array) => boolean | Promise<boolean>)

/** One inbound event, as the handler gets it. */
export interface WebhookEvent<R = Request> {
  /** The provider's event id. */
  readonly id: string
  /** The raw body bytes, exactly as they arrived (what signatures are computed over). */
  readonly rawBody: Uint8Array
  /** The body parsed as JSON, or undefined if it is not JSON. */
  readonly body: unknown
  /** The framework's request: a Fetch `Request`, Hono's context, Express's or Fastify's request. */
  readonly request: R
}

/** What a webhook receiver takes: the inbox, the signature check, how to read the event id, the handler and the body limit. */
export interface WebhookReceiverOptions<Tx, R = Request> {
  /** The inbox that records event ids (its consumer names the endpoint, e.g. `stripe-webhooks`). */
  inbox: Inbox<Tx, unknown>
  /**
   * Where the event id is. Optional with a built-in verifier, which reads it from its own
   * scheme (Stripe's `evt_…`, GitHub's delivery id, Standard Webhooks' `webhook-id`,
   * Shopify's webhook id, Slack's `event_id`); given, it is used instead.
   */
  eventId?: WebhookEventId<R>
  /** Handles a new event in the transaction that records its id. Throw to make the provider retry (answers 500). */
  handler: (tx: Tx, event: WebhookEvent<R>) => unknown
  /**
   * Checks the provider's signature over the raw body bytes before anything is parsed or
   * recorded; a delivery that fails is answered 401 `invalid-signature`.
   */
  verify?: WebhookVerify<R>
  /** Bodies larger than this are refused with 413. @default 1 MiB */
  maxBodyBytes?: number
  /** Where problem `type` URIs point (see `ProblemTypes`). @default idem's docs */
  problemTypes?: ProblemTypes
  /** Where each delivery is reported (`type: 'webhook'`: verified, refused, duplicate, …). @default idemEvents */
  events?: EventStream
}

const OPTIONS = optionNames<WebhookReceiverOptions<unknown>>({ inbox: true, eventId: true, handler: true, verify: true, maxBodyBytes: true, problemTypes: true, events: true })

/** A receiver on the exchange: the request as idem reads it, and the framework's own for the handler and the hooks. */
export type ReceiveWebhook<R> = (request: HttpRequest, native: R) => Promise<HttpAnswer>

const utf8 = new TextDecoder()

/**
 * The webhook receiver every adapter runs, on the exchange (`exchange.ts`): its options
 * checked once, then each delivery read as bytes, verified, recorded through the inbox
 * and answered. Mapping the framework's request and sending the answer is the adapter's.
 * @throws InvalidOptionError naming the option
 */
export function webhookReceiving<Tx, R>(caller: string, options: WebhookReceiverOptions<Tx, R>): ReceiveWebhook<R> {
  assertKnownOptions(caller, options, OPTIONS)
  const { inbox, eventId, handler, verify, maxBodyBytes = 1024 * 1024, problemTypes, events = idemEvents } = options
  if (inbox === null || typeof inbox !== 'object' || typeof inbox.consume !== 'function') {
    throw new InvalidOptionError(`${caller}: option "inbox" must come from createInbox(...)`)
  }
  const verifier = typeof verify === 'object' && verify !== null && typeof verify.verify === 'function' ? verify : undefined
  if (verify !== undefined && verifier === undefined && typeof verify !== 'function') {
    throw new InvalidOptionError(`${caller}: option "verify" must be a verifier (stripeSignature({ secret }), … from idem/webhooks) or a function (request, rawBody) => boolean`)
  }
  if (eventId === undefined && verifier === undefined) {
    throw new InvalidOptionError(`${caller}: option "eventId" is required unless "verify" is a verifier from idem/webhooks, which reads the event id itself`)
  }
  if (eventId !== undefined && eventId !== 'stripe' && eventId !== 'github' && typeof eventId !== 'function') {
    throw new InvalidOptionError(`${caller}: option "eventId" must be 'stripe', 'github' or a function (request, rawBody) => id`)
  }
  if (typeof handler !== 'function') throw new InvalidOptionError(`${caller}: option "handler" must be a function (tx, event) => …`)
  assertCount(`${caller}: option "maxBodyBytes"`, maxBodyBytes, 1, Number.MAX_SAFE_INTEGER)
  if (events === null || typeof events !== 'object' || typeof events.emit !== 'function') {
    throw new InvalidOptionError(`${caller}: option "events" must be an event stream (createEventStream())`)
  }
  const { consumer } = inbox
  const scheme = verifier === undefined ? {} : { scheme: verifier.scheme }
  const signatureOf = verify === undefined ? 'unchecked' : 'verified'
  const report = (status: WebhookReceiverEvent['status'], check?: string): void => {
    if (!events.listening) return
    const signature = status === 'refused' ? 'refused' : signatureOf
    events.emit({ type: 'webhook', consumer, signature, status, ...scheme, ...(check === undefined ? {} : { check }) })
  }

  const answer = (code: ProblemCode, detail: string, extra?: { headers?: Record<string, string>; members?: Record<string, string> }): HttpAnswer =>
    problemCodeAnswer(code, detail, { types: problemTypes, ...extra })

  return async function receiveWebhook(request: HttpRequest, native: R): Promise<HttpAnswer> {
    if (request.method !== 'POST') return answer('method-not-allowed', 'Webhooks are delivered with POST', { headers: { allow: 'POST' } })
    let bytes: Uint8Array
    try {
      // Counted as it arrives: a body sent without Content-Length is refused at the
      // limit, never buffered whole first.
      bytes = await request.body(maxBodyBytes)
    } catch (error) {
      if (!(error instanceof BodyTooLargeError)) throw error
      return problemAnswer(error, problemTypes)
    }
    // The signature is checked on the bytes as they arrived (a BOM or invalid UTF-8 stays
    // as it is), before anything is parsed or recorded.
    let verifiedId: string | undefined
    if (verifier !== undefined) {
      const verification = verifier.verify({ header: (name) => request.header(name), body: bytes })
      if (verification.status === 'refused') {
        report('refused', verification.check)
        return answer('invalid-signature', verification.detail, { members: { check: verification.check } })
      }
      verifiedId = verification.eventId
    } else if (typeof verify === 'function' && !(await verify(native, bytes))) {
      report('refused')
      return answer('invalid-signature', 'The webhook signature does not verify')
    }
    let body: unknown
    try {
      body = JSON.parse(utf8.decode(bytes))
    } catch {
      body = undefined
    }
    let id: string | undefined
    try {
      id = eventId === undefined ? verifiedId : await idOf(eventId, request, native, bytes, body)
    } catch (error) {
      report('no-event-id')
      return answer('missing-key', `Could not read the event id: ${(error as Error)?.message ?? String(error)}`)
    }
    if (id === undefined || id.length === 0) {
      report('no-event-id')
      return answer('missing-key', describeMissing())
    }
    const event: WebhookEvent<R> = { id, rawBody: bytes, body, request: native }
    let result
    try {
      result = await inbox.consume({ id, body: body ?? utf8.decode(bytes) }, (tx) => handler(tx, event))
    } catch (error) {
      // The store is down or not set up: nothing was recorded, so the provider's retry is
      // safe. Anything else is a bug of the app's and propagates, as from any route.
      if (error instanceof IdemError) return problemAnswer(error, problemTypes)
      throw error
    }
    report(result.status)
    switch (result.status) {
      case 'processed':
        return json({ received: true, id })
      case 'duplicate':
        return json({ received: true, id, duplicate: true }, ['idempotent-replayed', 'true'])
      case 'dead-lettered':
        return json({ received: true, id, deadLettered: true })
      case 'in-flight':
        return problemCodeAnswer('in-flight', 'This event is being handled right now', {
          types: problemTypes,
          retryAfterSeconds: Math.ceil(result.retryAfterMs / 1000),
        })
      case 'failed':
        return answer('handler-failed', `Handling the event failed (attempt ${result.attempts}); it will be handled again on the next delivery`)
    }
  }

  function describeMissing(): string {
    if (eventId === 'github') return 'The X-GitHub-Delivery header is missing'
    if (eventId === 'stripe') return 'The body has no Stripe event id ("id": "evt_…")'
    if (eventId === undefined) return `The verified delivery carries no ${verifier!.scheme} event id`
    return 'The eventId function found no event id'
  }
}

async function idOf<R>(eventId: WebhookEventId<R>, request: HttpRequest, native: R, bytes: Uint8Array, body: unknown): Promise<string | undefined> {
  if (eventId === 'github') return request.header('x-github-delivery') ?? undefined
  if (eventId === 'stripe') {
    const id = (body as { id?: unknown } | undefined)?.id
    return typeof id === 'string' && id.startsWith('evt_') ? id : undefined
  }
  const id = await eventId(native, bytes)
  if (id !== undefined && typeof id !== 'string') throw new TypeError('the eventId function must return a string')
  return id
}

function json(value: object, headers: readonly string[] = []): HttpAnswer {
  return { status: 200, headers: ['content-type', 'application/json', ...headers], body: JSON.stringify(value) }
}

/**
 * A webhook endpoint as a Fetch-standard handler (Request → Response), for any runtime
 * that speaks them (Bun, Deno, Cloudflare Workers, Next.js route handlers); Hono,
 * Express, Fastify and NestJS have their own `webhookReceiver`. Providers deliver at
 * least once and retry on any non-2xx or timeout. The signature is checked on the raw
 * bytes first (`verify`: a refusal is 401 `invalid-signature`, nothing recorded); then
 * the event id is recorded through the inbox in the same transaction as the handler's
 * writes, a repeat is answered 200 at once (`Idempotent-Replayed: true`) without running
 * the handler, and a handler that throws is answered 500 so the provider retries. After
 * the inbox's `maxAttempts` failures the event is dead-lettered and answered 200, so the
 * provider stops.
 *
 * @example
 * const receive = webhookReceiver({
 *   inbox: createInbox({ store, consumer: 'stripe-webhooks' }),
 *   verify: stripeSignature({ secret: process.env.STRIPE_WEBHOOK_SECRET! }),
 *   handler: async (tx, event) => { await tx.query('UPDATE orders SET paid = true WHERE …') },
 * })
 * const response = await receive(new Request('https://example.com/webhooks/stripe', { method: 'POST', body: '{}' })) // 401: unsigned
 * @see docs/webhooks.md
 */
export function webhookReceiver<Tx>(options: WebhookReceiverOptions<Tx, Request>): (request: Request) => Promise<Response> {
  const receive = webhookReceiving('webhookReceiver', options)
  return async (request) => webResponse(await receive(webRequest(request), request))
}
