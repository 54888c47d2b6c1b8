// Where the receiver reads a delivery's event id (the key its inbox records), decided
// once at construction: the verifier's own id, a named source, or the app's function.
import { createHash } from 'node:crypto'
import { InvalidOptionError } from '../../core/errors/invalid-option.js'
import type { HttpRequest } from '../exchange.js'

/** Where a provider puts its event id, when `verify` is not a built-in verifier that reads it. */
export type WebhookEventId<R = Request> =
  /** Stripe: the `evt_…` id in the JSON body. */
  | 'stripe'
  /** GitHub: the `X-GitHub-Delivery` header (the same on GitHub's redeliveries). */
  | 'github'
  /**
   * The SHA-256 of the raw body bytes, as `sha256:<hex>`, instead of the provider's id.
   * For schemes that sign neither the id nor a time (GitHub, Shopify), where a captured
   * delivery sent again under a fresh id would run again: its signed bytes are the
   * same, so it is a duplicate. Two events whose bodies are byte for byte the same are
   * then one event, and deliveries of one event whose bodies differ are two.
   */
  | 'body-digest'
  /** Anything else: a function of the framework's request and the raw body bytes. */
  | ((request: R, rawBody: Uint8Array) => string | undefined | Promise<string | undefined>)

/** How the receiver reads the event id: `read` for each delivery, `missing` to say why none was found. */
export interface EventIdReader<R> {
  /** The id, or undefined when the delivery has none; `verified` is what the verifier read. */
  read(request: HttpRequest, native: R, bytes: Uint8Array, body: unknown, verified: string | undefined): Promise<string | undefined> | string | undefined
  /** The 400's detail when `read` found none. */
  readonly missing: string
}

/**
 * The reader for option `eventId`, or, when it is not given, the verifier's id (`scheme`
 * names the verifier; undefined when there is none).
 * @throws InvalidOptionError naming the option
 */
export function eventIdReader<R>(caller: string, eventId: unknown, scheme: string | undefined): EventIdReader<R> {
  if (eventId === undefined) {
    if (scheme === undefined) {
      throw new InvalidOptionError(`${caller}: option "eventId" is required unless "verify" is a verifier from idem/webhooks, which reads the event id itself`)
    }
    return { read: (_request, _native, _bytes, _body, verified) => verified, missing: `The verified delivery carries no ${scheme} event id` }
  }
  if (eventId === 'github') return { read: (request) => request.header('x-github-delivery') ?? undefined, missing: 'The X-GitHub-Delivery header is missing' }
  if (eventId === 'stripe') return { read: (_request, _native, _bytes, body) => stripeEventId(body), missing: 'The body has no Stripe event id ("id": "evt_…")' }
  if (eventId === 'body-digest') return { read: (_request, _native, bytes) => bodyDigest(bytes), missing: 'The body has no digest' }
  if (typeof eventId !== 'function') {
    throw new InvalidOptionError(`${caller}: option "eventId" must be 'stripe', 'github', 'body-digest' or a function (request, rawBody) => id`)
  }
  const idOf = eventId as (request: R, rawBody: Uint8Array) => unknown
  return {
    async read(_request, native, bytes) {
      const id = await idOf(native, bytes)
      if (id !== undefined && typeof id !== 'string') throw new TypeError('the eventId function must return a string')
      return id
    },
    missing: 'The eventId function found no event id',
  }
}

function stripeEventId(body: unknown): string | undefined {
  const id = body !== null && typeof body === 'object' ? Object.getOwnPropertyDescriptor(body, 'id')?.value : undefined
  return typeof id === 'string' && id.startsWith('evt_') ? id : undefined
}

/** The body's identity: what a resent copy of a signed body cannot change. */
function bodyDigest(bytes: Uint8Array): string {
  return `sha256:${createHash('sha256').update(bytes).digest('hex')}`
}
