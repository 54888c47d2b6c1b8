import { BodyTooLargeError } from '../body-too-large.js'
import { IdemError } from '../../core/errors/idem-error.js'
import { InvalidOptionError } from '../../core/errors/invalid-option.js'
import { idemEvents, type EventStream } from '../../core/events.js'
import { webhookRefusedLine, type WebhookReceiverEvent } from '../events.js'
import { assertCount, assertKnownOptions, optionNames } from '../../core/errors/option-checks.js'
import type { Inbox } from '../../queue/inbox.js'
import type { HttpAnswer, HttpRequest } from '../exchange.js'
import { problemAnswer, problemCodeAnswer, type ProblemTypes } from '../problem.js'
import { eventIdReader, type EventIdReader, type WebhookEventId } from './event-id.js'
import { signatureCheck, type SignatureCheck, type WebhookVerify } from './verify.js'
import { webRequest, webResponse } from '../adapters/web/index.js'

export type { WebhookEventId } from './event-id.js'
export type { WebhookVerify } from './verify.js'

/**
 * One inbound event, as the handler gets it: `R` is the framework's request, `Body` the
 * shape you declare for the provider's JSON (`webhookReceiver<Tx, Body>`; not checked:
 * the signature says who sent it, not its shape).
 */
export interface WebhookEvent<R = Request, Body = unknown> {
  /** The event id the inbox recorded: the provider's, or `sha256:…` with `eventId: 'body-digest'`. */
  readonly id: string
  /** The raw body bytes, exactly as they arrived (what signatures are computed over). */
  readonly rawBody: Uint8Array
  /** The body parsed as JSON (typed as the receiver's `Body`), or undefined if it is not JSON. */
  readonly body: Body | undefined
  /** The framework's request: a Fetch `Request`, Hono's context, Express's or Fastify's request. */
  readonly request: R
}

/** What a webhook receiver takes: the inbox, the signature check, how to read the event id, the handler and the body limit. */
export interface WebhookReceiverOptions<Tx, R = Request, Body = unknown> {
  /** The inbox that records event ids (its consumer names the endpoint, e.g. `stripe-webhooks`). */
  inbox: Inbox<Tx, unknown>
  /**
   * Where the event id is. Optional with a built-in verifier, which reads it from its own
   * scheme (Stripe's `evt_…`, GitHub's delivery id, Standard Webhooks' `webhook-id`,
   * Shopify's event id, Slack's `event_id`); given, it is used instead: `'body-digest'`
   * makes the body's SHA-256 the id, for schemes that sign neither id nor time.
   */
  eventId?: WebhookEventId<R>
  /** Handles a new event in the transaction that records its id. Throw to make the provider retry (answers 500). */
  handler: (tx: Tx, event: WebhookEvent<R, Body>) => unknown
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

/** Reports one delivery on the event stream: what became of it, and which check refused it. */
type Report = (status: WebhookReceiverEvent['status'], check?: string) => void

/** A receiver's options, checked and made ready once. */
interface Receiver<Tx, R, Body> {
  readonly inbox: Inbox<Tx, unknown>
  readonly handler: (tx: Tx, event: WebhookEvent<R, Body>) => unknown
  readonly signature: SignatureCheck<R>
  readonly ids: EventIdReader<R>
  readonly maxBodyBytes: number
  readonly problemTypes: ProblemTypes | undefined
  readonly report: Report
}

/**
 * The webhook receiver every adapter runs, on the exchange (`exchange.ts`): its options
 * checked once, then each delivery read as bytes, verified, recorded through the inbox
 * and answered. Mapping the framework's request and sending the answer is the adapter's.
 * @throws InvalidOptionError naming the option
 */
export function webhookReceiving<Tx, R, Body>(caller: string, options: WebhookReceiverOptions<Tx, R, Body>): ReceiveWebhook<R> {
  assertKnownOptions(caller, options, OPTIONS)
  const { inbox, eventId, handler, verify, maxBodyBytes = 1024 * 1024, problemTypes, events = idemEvents } = options
  if (inbox === null || typeof inbox !== 'object' || typeof inbox.consume !== 'function') {
    throw new InvalidOptionError(`${caller}: option "inbox" must come from createInbox(...)`)
  }
  const signature = signatureCheck<R>(caller, verify)
  const ids = eventIdReader<R>(caller, eventId, signature.scheme)
  if (typeof handler !== 'function') throw new InvalidOptionError(`${caller}: option "handler" must be a function (tx, event) => …`)
  assertCount(`${caller}: option "maxBodyBytes"`, maxBodyBytes, 1, Number.MAX_SAFE_INTEGER)
  if (events === null || typeof events !== 'object' || typeof events.emit !== 'function') {
    throw new InvalidOptionError(`${caller}: option "events" must be an event stream (createEventStream())`)
  }
  const receiver: Receiver<Tx, R, Body> = { inbox, handler, signature, ids, maxBodyBytes, problemTypes, report: reporter(inbox.consumer, signature, events) }
  return (request, native) => receive(receiver, request, native)
}

function reporter(consumer: string, signature: SignatureCheck<unknown>, events: EventStream): Report {
  const scheme = signature.scheme === undefined ? {} : { scheme: signature.scheme }
  return (status, check) => {
    if (status !== 'refused' && !events.listening) return
    const event: WebhookReceiverEvent = { type: 'webhook', consumer, signature: status === 'refused' ? 'refused' : signature.passed, status, ...scheme, ...(check === undefined ? {} : { check }) }
    if (status === 'refused') events.fail(event, webhookRefusedLine(consumer, signature.scheme, check))
    else events.emit(event)
  }
}

/** One delivery: read, checked, its id read, then recorded with the handler's writes. */
async function receive<Tx, R, Body>(receiver: Receiver<Tx, R, Body>, request: HttpRequest, native: R): Promise<HttpAnswer> {
  const { problemTypes: types, report } = receiver
  if (request.method !== 'POST') return problemCodeAnswer('method-not-allowed', 'Webhooks are delivered with POST', { types, headers: { allow: 'POST' } })
  let bytes: Uint8Array
  try {
    // Counted as it arrives: a body sent without Content-Length is refused at the
    // limit, never buffered whole first.
    bytes = await request.body(receiver.maxBodyBytes)
  } catch (error) {
    if (!(error instanceof BodyTooLargeError)) throw error
    return problemAnswer(error, types)
  }
  // The signature is checked on the bytes as they arrived (a BOM or invalid UTF-8 stays
  // as it is), before anything is parsed or recorded.
  const signed = await receiver.signature.check(request, native, bytes)
  if (signed.status === 'refused') {
    report('refused', signed.check)
    return problemCodeAnswer('invalid-signature', signed.detail, { types, ...(signed.check === undefined ? {} : { members: { check: signed.check } }) })
  }
  // The provider checking the endpoint (Slack's url_verification), signed: no event, so
  // it is answered before any id is read, and nothing is recorded or run.
  if (signed.status === 'handshake') {
    report('handshake')
    return { status: 200, headers: ['content-type', signed.reply.contentType], body: signed.reply.body }
  }
  let body: Body | undefined
  try {
    // The shape the app declared for its provider's JSON (WebhookEvent's Body), as
    // JSON.parse's own any would be: the signature vouches for the sender, not the shape.
    body = JSON.parse(utf8.decode(bytes)) as Body
  } catch {
    body = undefined
  }
  let id: string | undefined
  try {
    id = await receiver.ids.read(request, native, bytes, body, signed.eventId)
  } catch (error) {
    report('no-event-id')
    return problemCodeAnswer('missing-key', `Could not read the event id: ${(error as Error)?.message ?? String(error)}`, { types })
  }
  if (id === undefined || id.length === 0) {
    report('no-event-id')
    return problemCodeAnswer('missing-key', receiver.ids.missing, { types })
  }
  return record(receiver, { id, rawBody: bytes, body, request: native })
}

/** The event recorded through the inbox, in the transaction its handler writes through, and answered by what became of it. */
async function record<Tx, R, Body>(receiver: Receiver<Tx, R, Body>, event: WebhookEvent<R, Body>): Promise<HttpAnswer> {
  const { inbox, handler, problemTypes: types } = receiver
  const { id } = event
  let result
  try {
    result = await inbox.consume({ id, body: event.body ?? utf8.decode(event.rawBody) }, (tx) => handler(tx, event))
  } catch (error) {
    // The store is down or not set up: nothing was recorded, so the provider's retry is
    // safe. Anything else is a bug of the app's and propagates, as from any route.
    if (error instanceof IdemError) return problemAnswer(error, types)
    throw error
  }
  receiver.report(result.status)
  switch (result.status) {
    case 'processed':
      return json({ received: true, id })
    case 'duplicate':
      return json({ received: true, id, duplicate: true }, ['idempotent-replayed', 'true'])
    case 'dead-lettered':
      return json({ received: true, id, deadLettered: true })
    case 'in-flight':
      return problemCodeAnswer('in-flight', 'This event is being handled right now', { types, retryAfterSeconds: Math.ceil(result.retryAfterMs / 1000) })
    case 'failed':
      return problemCodeAnswer('handler-failed', `Handling the event failed (attempt ${result.attempts}); it will be handled again on the next delivery`, { types })
  }
}

function json(value: object, headers: readonly string[] = []): HttpAnswer {
  return { status: 200, headers: ['content-type', 'application/json', ...headers], body: JSON.stringify(value) }
}

/**
 * A webhook endpoint as a Fetch-standard handler (Request → Response), for any runtime
 * that speaks them (Bun, Deno, Cloudflare Workers, Next.js route handlers); Hono,
 * Express, Koa, Fastify, NestJS and Lambda have their own `webhookReceiver`. Providers deliver at
 * least once and retry on any non-2xx or timeout. The signature is checked on the raw
 * bytes first (`verify`: a refusal is 401 `invalid-signature`, nothing recorded; a
 * provider's signed check of the endpoint, such as Slack's `url_verification`, is
 * answered 200 with the verifier's reply, nothing recorded); then
 * the event id is recorded through the inbox in the same transaction as the handler's
 * writes, a repeat is answered 200 at once (`Idempotent-Replayed: true`) without running
 * the handler, and a handler that throws is answered 500 so the provider retries. After
 * the inbox's `maxAttempts` failures the event is dead-lettered and answered 200, so the
 * provider stops.
 *
 * @example
 * interface StripeEvent { type: string; data: { object: { id: string } } } // what you read of the body
 * const receive = webhookReceiver<PgClient, StripeEvent>({
 *   inbox: createInbox({ store, consumer: 'stripe-webhooks' }),
 *   verify: stripeSignature({ secret: process.env.STRIPE_WEBHOOK_SECRET! }),
 *   handler: async (tx, event) => { await tx.query('UPDATE orders SET paid = true WHERE intent = $1', [event.body?.data.object.id]) },
 * })
 * const response = await receive(new Request('https://example.com/webhooks/stripe', { method: 'POST', body: '{}' })) // 401: unsigned
 * @see docs/webhooks.md
 */
export function webhookReceiver<Tx, Body = unknown>(options: WebhookReceiverOptions<Tx, Request, Body>): (request: Request) => Promise<Response> {
  const receive = webhookReceiving('webhookReceiver', options)
  return async (request) => webResponse(await receive(webRequest(request), request))
}
