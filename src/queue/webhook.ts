import { BodyTooLargeError } from '../core/errors/body-too-large.js'
import { InvalidOptionError } from '../core/errors/invalid-option.js'
import { MissingKeyError } from '../core/errors/missing-key.js'
import { assertCount } from '../core/validate.js'
import { PROBLEM_TYPE_BASE } from '../core/errors/idem-error.js'
import { readBody } from '../http/body.js'
import type { Inbox } from './inbox.js'

/** Where a provider puts its event id. */
export type WebhookEventId =
  /** Stripe: the `evt_…` id in the JSON body. */
  | 'stripe'
  /** GitHub: the `X-GitHub-Delivery` header (the same on GitHub's redeliveries). */
  | 'github'
  /** Anything else: a function of the request and its raw body text. */
  | ((request: Request, body: string) => string | undefined | Promise<string | undefined>)

/** One inbound event, as the handler gets it. */
export interface WebhookEvent {
  /** The provider's event id. */
  readonly id: string
  /** The raw body text (what signatures are computed over). */
  readonly rawBody: string
  /** The body parsed as JSON, or undefined if it is not JSON. */
  readonly body: unknown
  readonly request: Request
}

export interface WebhookReceiverOptions<Tx> {
  /** The inbox that records event ids (its consumer names the endpoint, e.g. `stripe-webhooks`). */
  inbox: Inbox<Tx, unknown>
  eventId: WebhookEventId
  /** Handles a new event in the transaction that records its id. Throw to make the provider retry (answers 500). */
  handler: (tx: Tx, event: WebhookEvent) => unknown
  /**
   * Checks the provider's signature over the raw body before anything is recorded
   * (Stripe-Signature, X-Hub-Signature-256). Return false to answer 401.
   */
  verify?: (request: Request, rawBody: string) => boolean | Promise<boolean>
  /** Bodies larger than this are refused with 413. @default 1 MiB */
  maxBodyBytes?: number
}

const JSON_HEADERS = { 'content-type': 'application/json' }

/**
 * A webhook endpoint as a Fetch-standard handler (Request → Response), to mount on any
 * HTTP framework. Providers deliver at least once and retry on any non-2xx or
 * timeout; this receiver records the provider's event id through the inbox in the
 * same transaction as the handler's writes, answers a repeat with 200 at once
 * (`Idempotent-Replayed: true`) without running the handler, and answers 500 when the
 * handler throws so the provider retries. After the inbox's `maxAttempts` failures the
 * event is dead-lettered and answered 200, so the provider stops.
 *
 * @example
 * const stripeWebhook = webhookReceiver({
 *   inbox: createInbox({ store, consumer: 'stripe-webhooks' }),
 *   eventId: 'stripe',
 *   verify: (req, raw) => verifyStripeSignature(req.headers.get('stripe-signature'), raw),
 *   handler: async (tx, event) => { await tx.query('UPDATE orders SET paid = true WHERE …') },
 * })
 * app.post('/webhooks/stripe', (c) => stripeWebhook(c.req.raw)) // Hono
 * @see docs/queue.md
 */
export function webhookReceiver<Tx>({
  inbox,
  eventId,
  handler,
  verify,
  maxBodyBytes = 1024 * 1024,
}: WebhookReceiverOptions<Tx>): (request: Request) => Promise<Response> {
  const caller = 'webhookReceiver'
  if (inbox === null || typeof inbox !== 'object' || typeof inbox.consume !== 'function') {
    throw new InvalidOptionError(`${caller}: option "inbox" must come from createInbox(...)`)
  }
  if (eventId !== 'stripe' && eventId !== 'github' && typeof eventId !== 'function') {
    throw new InvalidOptionError(`${caller}: option "eventId" must be 'stripe', 'github' or a function (request, body) => id`)
  }
  if (typeof handler !== 'function') throw new InvalidOptionError(`${caller}: option "handler" must be a function (tx, event) => …`)
  if (verify !== undefined && typeof verify !== 'function') throw new InvalidOptionError(`${caller}: option "verify" must be a function`)
  assertCount(`${caller}: option "maxBodyBytes"`, maxBodyBytes, 1, Number.MAX_SAFE_INTEGER)

  return async function receiveWebhook(request: Request): Promise<Response> {
    if (request.method !== 'POST') return problem(405, 'method-not-allowed', 'Webhooks are delivered with POST', { allow: 'POST' })
    let bytes: Uint8Array
    try {
      // Counted as it arrives: a body sent without Content-Length is refused at the
      // limit, never buffered whole first.
      bytes = await readBody(request, maxBodyBytes)
    } catch (error) {
      if (!(error instanceof BodyTooLargeError)) throw error
      return problem(413, 'body-too-large', `The body exceeds ${maxBodyBytes} bytes`)
    }
    const rawBody = new TextDecoder().decode(bytes)
    if (verify !== undefined && !(await verify(request, rawBody))) return problem(401, 'invalid-signature', 'The webhook signature does not verify')
    let body: unknown
    try {
      body = JSON.parse(rawBody)
    } catch {
      body = undefined
    }
    let id: string | undefined
    try {
      id = await idOf(request, rawBody, body)
    } catch (error) {
      return problem(400, 'missing-key', `Could not read the event id: ${(error as Error)?.message ?? String(error)}`)
    }
    if (id === undefined || id.length === 0) return problem(400, 'missing-key', describeMissing())
    const event: WebhookEvent = { id, rawBody, body, request }
    let result
    try {
      result = await inbox.consume({ id, body: body ?? rawBody }, (tx) => handler(tx, event))
    } catch (error) {
      if (error instanceof MissingKeyError) return problem(400, 'missing-key', error.message)
      // The store is down: nothing was recorded, so the provider's retry is safe.
      return problem(503, 'store-unavailable', 'The event could not be recorded; retry later', { 'retry-after': '1' })
    }
    switch (result.status) {
      case 'processed':
        return Response.json({ received: true, id }, { status: 200 })
      case 'duplicate':
        return new Response(JSON.stringify({ received: true, id, duplicate: true }), {
          status: 200,
          headers: { ...JSON_HEADERS, 'idempotent-replayed': 'true' },
        })
      case 'dead-lettered':
        return Response.json({ received: true, id, deadLettered: true }, { status: 200 })
      case 'in-flight':
        return problem(409, 'in-flight', 'This event is being handled right now', { 'retry-after': String(Math.ceil(result.retryAfterMs / 1000)) })
      case 'failed':
        return problem(500, 'handler-failed', `Handling the event failed (attempt ${result.attempts}); it will be handled again on the next delivery`)
    }
  }

  async function idOf(request: Request, rawBody: string, body: unknown): Promise<string | undefined> {
    if (eventId === 'github') return request.headers.get('x-github-delivery') ?? undefined
    if (eventId === 'stripe') {
      const id = (body as { id?: unknown } | undefined)?.id
      return typeof id === 'string' && id.startsWith('evt_') ? id : undefined
    }
    const id = await (eventId as Exclude<WebhookEventId, string>)(request, rawBody)
    if (id !== undefined && typeof id !== 'string') throw new TypeError('the eventId function must return a string')
    return id
  }

  function describeMissing(): string {
    if (eventId === 'github') return 'The X-GitHub-Delivery header is missing'
    if (eventId === 'stripe') return 'The body has no Stripe event id ("id": "evt_…")'
    return 'The eventId function found no event id'
  }
}

function problem(status: number, code: string, detail: string, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify({ type: `${PROBLEM_TYPE_BASE}#${code}`, title: detail, status, detail }), {
    status,
    headers: { 'content-type': 'application/problem+json', ...headers },
  })
}
