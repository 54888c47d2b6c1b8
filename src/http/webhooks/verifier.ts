/**
 * One delivery as a verifier reads it: nothing of any framework, so every adapter can
 * hand it over (a Fetch `Request`'s headers, Node's `req.headers`, Hono's context).
 */
export interface WebhookDelivery {
  /**
   * The value of a request header, looked up by its lower-case name; `undefined` or
   * `null` when the request has none. So a Fetch `Request`'s
   * `(name) => request.headers.get(name)` fits, and so does Node's
   * `(name) => req.headers[name]` (Express, Fastify, NestJS), whose repeated field lines
   * are combined with ", ".
   */
  readonly header: (name: string) => string | readonly string[] | null | undefined
  /** The raw body bytes, exactly as they arrived: signatures are over these, never over parsed JSON. */
  readonly body: Uint8Array
  /** The clock, in milliseconds since the epoch, for the timestamp window. @default Date.now */
  readonly now?: () => number
}

/** Which check refused a delivery. */
export type WebhookCheck =
  /** A header the scheme signs or carries its signature in is absent or empty. */
  | 'missing-header'
  /** A header is present but not in the scheme's format (a truncated signature, a timestamp that is not a number). */
  | 'malformed-header'
  /** The signed timestamp is older than the tolerance: a replay, or a delivery held too long. */
  | 'stale-timestamp'
  /** The signed timestamp is further ahead of this clock than the tolerance. */
  | 'future-timestamp'
  /** No signature in the delivery matches the body under any of the secrets. */
  | 'no-matching-signature'

/**
 * What a verifier answers a provider's handshake with: the body of a 200 and its media
 * type. Only the provider's own check of the endpoint gets one (Slack's
 * `url_verification`, which wants its `challenge` back), and only once the signature
 * holds; the receiver answers it without recording anything or running the handler.
 */
export interface WebhookHandshakeReply {
  /** The reply's `Content-Type` (`application/json`, `text/plain`). */
  readonly contentType: string
  /** The reply's body, sent as UTF-8. */
  readonly body: string
}

/**
 * A verifier's answer: `verified`, with the provider's event id where its scheme has
 * one; `handshake`, a signed check of the endpoint by the provider (no event: answer it
 * with `reply`, record nothing); or `refused`, naming the check that failed. A
 * refusal's `detail` names headers and checks only: never a secret, never the signature
 * it expected.
 */
export type WebhookVerification =
  | {
      readonly status: 'verified'
      /**
       * The provider's id for the event, read after the signature verified, from where
       * the provider says a repeat has the same one: Standard Webhooks' `webhook-id`
       * (`svix-id`), GitHub's `X-GitHub-Delivery`, Shopify's `X-Shopify-Event-Id`,
       * Stripe's `evt_…` and Slack's `event_id` from the JSON body. `undefined` when the
       * delivery carries none.
       */
      readonly eventId: string | undefined
    }
  | {
      readonly status: 'handshake'
      /** What to answer the provider with (a 200). */
      readonly reply: WebhookHandshakeReply
    }
  | {
      readonly status: 'refused'
      readonly check: WebhookCheck
      /** What failed, for a 401's problem detail and the logs; safe to send back. */
      readonly detail: string
    }

/**
 * Checks one provider's signature over a delivery's raw bytes. Pure and synchronous: no
 * I/O, no framework, so any adapter can call it before anything is parsed or recorded.
 * Made by `stripeSignature`, `githubSignature`, `standardWebhooksSignature`,
 * `shopifySignature` and `slackSignature`, or by hand for another scheme.
 */
export interface WebhookVerifier {
  /** The scheme, for logs and metrics: `stripe`, `github`, `standard-webhooks`, `shopify`, `slack`. */
  readonly scheme: string
  /**
   * Checks one delivery's signature (and timestamp, where the scheme has one) over its
   * raw bytes; synchronous, no I/O. A signed handshake of the provider's is answered
   * `handshake`, never `verified`, so it is never taken for an event.
   */
  verify(delivery: WebhookDelivery): WebhookVerification
}
