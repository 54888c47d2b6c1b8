import { BodyTooLargeError } from '../core/errors/body-too-large.js'
import { InvalidOptionError } from '../core/errors/invalid-option.js'
import { assertCount, assertKnownOptions, optionNames } from '../core/validate.js'
import type { Inbox } from '../queue/inbox.js'
import { readBody } from './body.js'
import { isHttpProblem, problem, problemResponse, type ProblemTypes } from './problem.js'

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

/** What `webhookReceiver` takes: the inbox, how to read the event id, the handler, signature verification and the body limit. */
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
  /** Where problem `type` URIs point (see `ProblemTypes`). @default idem's docs */
  problemTypes?: ProblemTypes
}

const OPTIONS = optionNames<WebhookReceiverOptions<unknown>>({ inbox: true, eventId: true, handler: true, verify: true, maxBodyBytes: true, problemTypes: true })

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
export function webhookReceiver<Tx>(options: WebhookReceiverOptions<Tx>): (request: Request) => Promise<Response> {
  const caller = 'webhookReceiver'
  assertKnownOptions(caller, options, OPTIONS)
  const { inbox, eventId, handler, verify, maxBodyBytes = 1024 * 1024, problemTypes } = options
  if (inbox === null || typeof inbox !== 'object' || typeof inbox.consume !== 'function') {
    throw new InvalidOptionError(`${caller}: option "inbox" must come from createInbox(...)`)
  }
  if (eventId !== 'stripe' && eventId !== 'github' && typeof eventId !== 'function') {
    throw new InvalidOptionError(`${caller}: option "eventId" must be 'stripe', 'github' or a function (request, body) => id`)
  }
  if (typeof handler !== 'function') throw new InvalidOptionError(`${caller}: option "handler" must be a function (tx, event) => …`)
  if (verify !== undefined && typeof verify !== 'function') throw new InvalidOptionError(`${caller}: option "verify" must be a function`)
  assertCount(`${caller}: option "maxBodyBytes"`, maxBodyBytes, 1, Number.MAX_SAFE_INTEGER)

  const answer = (code: Parameters<typeof problem>[0], detail: string, headers?: Record<string, string>): Response =>
    problem(code, detail, { types: problemTypes, ...(headers === undefined ? {} : { headers }) })

  return async function receiveWebhook(request: Request): Promise<Response> {
    if (request.method !== 'POST') return answer('method-not-allowed', 'Webhooks are delivered with POST', { allow: 'POST' })
    let bytes: Uint8Array
    try {
      // Counted as it arrives: a body sent without Content-Length is refused at the
      // limit, never buffered whole first.
      bytes = await readBody(request, maxBodyBytes)
    } catch (error) {
      if (!(error instanceof BodyTooLargeError)) throw error
      return problemResponse(error, problemTypes)
    }
    const rawBody = new TextDecoder().decode(bytes)
    if (verify !== undefined && !(await verify(request, rawBody))) return answer('invalid-signature', 'The webhook signature does not verify')
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
      return answer('missing-key', `Could not read the event id: ${(error as Error)?.message ?? String(error)}`)
    }
    if (id === undefined || id.length === 0) return answer('missing-key', describeMissing())
    const event: WebhookEvent = { id, rawBody, body, request }
    let result
    try {
      result = await inbox.consume({ id, body: body ?? rawBody }, (tx) => handler(tx, event))
    } catch (error) {
      // The store is down or not set up: nothing was recorded, so the provider's retry is
      // safe. Anything else is a bug of the app's and propagates, as from any route.
      if (isHttpProblem(error)) return problemResponse(error, problemTypes)
      throw error
    }
    switch (result.status) {
      case 'processed':
        return Response.json({ received: true, id }, { status: 200 })
      case 'duplicate':
        return new Response(JSON.stringify({ received: true, id, duplicate: true }), {
          status: 200,
          headers: { 'content-type': 'application/json', 'idempotent-replayed': 'true' },
        })
      case 'dead-lettered':
        return Response.json({ received: true, id, deadLettered: true }, { status: 200 })
      case 'in-flight':
        return problem('in-flight', 'This event is being handled right now', {
          types: problemTypes,
          retryAfterSeconds: Math.ceil(result.retryAfterMs / 1000),
        })
      case 'failed':
        return answer('handler-failed', `Handling the event failed (attempt ${result.attempts}); it will be handled again on the next delivery`)
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
