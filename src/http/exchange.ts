/**
 * The middleware's own view of an HTTP exchange, the same behind every front end: what
 * it reads of a request, what a route replied, and what idem answers itself. Each
 * adapter maps its framework's objects to it: Node's `IncomingMessage` and
 * `ServerResponse` in `node.ts` (Express, Fastify, NestJS), Web-standard `Request` and
 * `Response` in `web.ts` (Fetch, Hono). No Web object is made for a Node request. Types
 * only.
 */

/** A body: bytes, or text sent as UTF-8. */
export type HttpBody = Uint8Array | string

/** A request, as the middleware reads it. */
export interface HttpRequest {
  /** The method, upper case. */
  readonly method: string
  /** The path, as sent, without the query. */
  readonly path: string
  /** The query string, without `?` (empty when there is none). */
  readonly query: string
  /** A header field's value (`name` in lower case), repeated fields joined with `, `; null when absent. */
  header(name: string): string | null
  /**
   * The body, read once, at most `limit` bytes: a declared length over it is refused
   * before anything is read, a streamed body as soon as it passes it.
   * @throws BodyTooLargeError
   */
  body(limit: number): Promise<Uint8Array>
}

/** An answer idem makes itself (a replay, a problem): header fields as a flat list of names (lower case) and values. */
export interface HttpAnswer {
  readonly status: number
  /** `[name, value, name, value, …]`; a repeated field is two pairs. */
  readonly headers: readonly string[]
  /** The body: text (a replay's is the text stored), or bytes (a replay's, stored as base64). */
  readonly body: HttpBody
  /**
   * The replay of a route that answered a bare value (`BodyForm` `value`): that value,
   * read back from its JSON (`body`), for a front end that answers with values to answer
   * it again. Front ends that send bytes send `body`.
   */
  readonly value?: { readonly json: unknown }
}

/**
 * How a route answered its body, where its platform tells the ways apart (Lambda): as
 * `text` (`body` is that text), as `base64` (`isBase64Encoded`; `body` is the bytes), or
 * as a bare JSON `value` (payload 2.0's result without `statusCode`; `body` is its JSON).
 * The stored form keeps it, so a replay answers the same way.
 */
export type BodyForm = 'text' | 'base64' | 'value'

/**
 * The route's reply as an adapter hands it back: `response` is the framework's own, sent
 * as it is when the request was fresh; the rest is what is stored for replays.
 */
export interface RouteReply<R> {
  readonly kind: 'reply'
  readonly response: R
  readonly status: number
  readonly body: HttpBody
  /**
   * How the route answered `body`, where the platform tells (Lambda): kept in the stored
   * form. Absent for a platform that sends bytes: a body that is UTF-8 is then stored as
   * text (an operator can read it), any other as base64.
   */
  readonly form?: BodyForm
  /** The reply's header fields whose names are in `names` (lower case), in their order, as a flat list. */
  headers(names: ReadonlySet<string>): string[]
}

/** A reply that is not stored: the effects and the key roll back, and `response` goes out as it is (the route threw and the framework answered, say). */
export interface RouteDiscarded<R> {
  readonly kind: 'discard'
  readonly response: R
  /** Its status, for the event stream. */
  readonly status: number
}

/** What running the route gave. */
export type RouteResult<R> = RouteReply<R> | RouteDiscarded<R>

/** What the middleware decided, for the adapter to carry out. */
export type Protected<R> =
  /** The request was not protected, and was handed on (`RouteCalls.pass`): the framework answers. */
  | { readonly kind: 'passed' }
  /** The route ran: send its own reply. */
  | { readonly kind: 'route'; readonly response: R }
  /** idem answers: a replay or a problem. */
  | { readonly kind: 'answer'; readonly answer: HttpAnswer }

/**
 * What a route did after it answered (on Node, where a route answers by ending its
 * response and runs on): it threw, with the error known (Fastify, NestJS); or something
 * answered a second time, with that answer's status (Express: an error handler, after
 * the route threw or passed an error to `next`).
 */
export type AfterAnswer = { readonly error: unknown } | { readonly secondAnswer: number }
