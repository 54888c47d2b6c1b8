/**
 * What the HTTP front end reports to the event stream (`idemEvents`): one `http` event
 * per request on a covered route, one `webhook` event per delivery to a webhook
 * receiver. Added to the core's `IdemEventTypes`, so `IdemEvent` holds them.
 */
import { allOf } from '../core/all-of.js'
import { errorText, type FailureLine } from '../core/logger.js'

declare module '../core/events.js' {
  interface IdemEventTypes {
    /** A request on a route the HTTP middleware covers: `HttpEvent`. */
    http: HttpEvent
    /** A delivery to a webhook receiver: `WebhookReceiverEvent`. */
    webhook: WebhookReceiverEvent
  }
}

/**
 * How the HTTP middleware answered a request it protects:
 * - `fresh`: the route ran and its answer was stored; `replayed`: a stored answer was sent;
 * - `not-stored`: the route ran and its answer (a 5xx, a transient 4xx) was rolled back;
 * - `missing-key`, `invalid-key` (400), `body-too-large` (413), `unsupported-encoding`
 *   (415), `corrupt-body` (400), `mismatch` (422), `in-flight` (409), `lease-lost`
 *   (409), `store-unavailable` (503): answered by idem
 *   without running the route (or, for `lease-lost`, without storing its answer);
 * - `overran` (503): the route still ran at `deadlineMs`; idem let its key go (rolled
 *   back, or released the lease) and answered for it (`path` says which route);
 * - `error`: idem answered 500 (missing tables, an outcome it cannot store, a
 *   misconfiguration), or the route threw and the framework answered;
 * - `unprotected`: no key on a route that does not require one; the route answered.
 */
export type HttpOutcome =
  | 'fresh'
  | 'replayed'
  | 'not-stored'
  | 'missing-key'
  | 'invalid-key'
  | 'body-too-large'
  | 'unsupported-encoding'
  | 'corrupt-body'
  | 'mismatch'
  | 'in-flight'
  | 'lease-lost'
  | 'overran'
  | 'store-unavailable'
  | 'error'
  | 'unprotected'

/** Every `HttpOutcome`: how the HTTP middleware answered (`HttpEvent.outcome`), the values of the requests metric's `outcome` label. */
export const HTTP_OUTCOMES = allOf<HttpOutcome>()([
  'fresh',
  'replayed',
  'not-stored',
  'missing-key',
  'invalid-key',
  'body-too-large',
  'unsupported-encoding',
  'corrupt-body',
  'mismatch',
  'in-flight',
  'lease-lost',
  'overran',
  'store-unavailable',
  'error',
  'unprotected',
])

/** One request on a route the HTTP middleware covers, and how it was answered. */
export interface HttpEvent {
  type: 'http'
  outcome: HttpOutcome
  method: string
  /** The status answered, when idem or the route's stored or replayed answer set it. */
  status?: number
  /** The request's path, on `overran`: which route held its key past the deadline. */
  path?: string
}

/** One delivery to a webhook receiver: its signature check, and what became of it. */
export interface WebhookReceiverEvent {
  type: 'webhook'
  /** The receiver's inbox consumer, naming the endpoint (`stripe-webhooks`). */
  consumer: string
  /** The signature: `verified` or `refused` by `verify`, `unchecked` without it. */
  signature: 'verified' | 'refused' | 'unchecked'
  /**
   * What became of it: `refused` (the signature; nothing recorded), `handshake` (the
   * provider checking the endpoint, answered by the verifier's reply; nothing recorded),
   * `no-event-id`, or the inbox's status once recorded: `processed`, `duplicate` (a
   * redelivery answered without running the handler), `failed`, `dead-lettered`,
   * `in-flight`.
   */
  status: 'refused' | 'handshake' | 'no-event-id' | 'processed' | 'duplicate' | 'failed' | 'dead-lettered' | 'in-flight'
  /** The verifier's scheme (`stripe`, `github`, …), when `verify` is a built-in verifier. */
  scheme?: string
  /** Which check refused it, for a refusal by a built-in verifier (`stale-timestamp`, …). */
  check?: string
}

/** Every `WebhookReceiverEvent.signature`. */
export const WEBHOOK_SIGNATURES = allOf<WebhookReceiverEvent['signature']>()(['verified', 'refused', 'unchecked'])

/** Every `WebhookReceiverEvent.status`. */
export const WEBHOOK_STATUSES = allOf<WebhookReceiverEvent['status']>()(['refused', 'handshake', 'no-event-id', 'processed', 'duplicate', 'failed', 'dead-lettered', 'in-flight'])

/** The line a 503 from the store writes (the cause, which the client is never told, is the operator's). */
export function storeUnavailableLine(method: string, path: string, error: unknown): FailureLine {
  const cause = error instanceof Error && error.cause !== undefined ? error.cause : error
  return {
    level: 'error',
    code: 'store-unavailable',
    message: `idem: answered ${method} ${path} with 503: the key store is unavailable`,
    fields: { method, path, status: 503, error: errorText(cause) },
  }
}

/** The line a refused webhook delivery writes: the endpoint and the check, never the body or the secret. */
export function webhookRefusedLine(consumer: string, scheme: string | undefined, check: string | undefined): FailureLine {
  return {
    level: 'warn',
    code: 'invalid-signature',
    message: `idem: refused a webhook delivery to ${consumer}: its signature did not verify${check === undefined ? '' : ` (${check})`}`,
    fields: { consumer, scheme, check },
  }
}
