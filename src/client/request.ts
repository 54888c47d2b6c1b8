import { abortable } from './abort.js'

/**
 * The caller's request settings other than method, headers and body. `cache` is typed
 * here because Node's `RequestInit` type leaves it out, though browsers honour it.
 */
type RequestSettings = Pick<RequestInit, 'credentials' | 'integrity' | 'keepalive' | 'mode' | 'redirect' | 'referrer' | 'referrerPolicy'> & {
  cache?: string
}

/**
 * A request reduced to what can be sent again: its body buffered once as bytes, so
 * every attempt carries exactly the same payload (and the server computes the same
 * fingerprint), whatever form the caller gave it in.
 */
export interface PreparedRequest {
  url: string
  method: string
  /** Includes any `Content-Type` the body implied (e.g. a multipart boundary). */
  headers: Headers
  /**
   * The bytes, held as a Blob: immutable, so every attempt can send it. (A Uint8Array
   * would do too, except that Node 20's fetch then fails to follow a 307/308: it
   * re-reads a buffer it has already detached.)
   */
  body: Blob | null
  /** The rest of the caller's request settings, copied onto every attempt. */
  settings: RequestSettings
  /** The caller's signal: cancels the whole call. */
  signal: AbortSignal | undefined
}

/**
 * Builds the request once and buffers its body. A `ReadableStream` body is read to the
 * end here (it could not be sent twice otherwise); so is a `Request` input's body, from
 * a clone, leaving the caller's `Request` unread.
 *
 * @throws TypeError when the body was already read or its stream is locked
 */
export async function prepareRequest(input: string | URL | Request, init: RequestInit = {}): Promise<PreparedRequest> {
  const { signal: initSignal, ...rest } = init
  const signal = initSignal ?? (input instanceof Request ? input.signal : undefined)
  signal?.throwIfAborted()
  let template: Request
  try {
    const source = input instanceof Request ? input.clone() : input
    // A stream body needs `duplex: 'half'` to be accepted at all; it is read fully below.
    const streamed = rest.body instanceof ReadableStream
    template = new Request(source, streamed ? { ...rest, duplex: 'half' } : rest)
  } catch (cause) {
    if (input instanceof Request && input.bodyUsed || rest.body instanceof ReadableStream) {
      throw new TypeError(
        'idem client: the request body was already read or its stream is locked; it must be readable once so it can be buffered and sent on every attempt',
        { cause },
      )
    }
    throw cause
  }
  const body = template.body === null ? null : new Blob([await abortable(template.arrayBuffer(), signal)])
  return {
    url: template.url,
    method: template.method,
    headers: new Headers(template.headers),
    body,
    settings: {
      cache: template.cache,
      credentials: template.credentials,
      integrity: template.integrity,
      keepalive: template.keepalive,
      mode: template.mode,
      redirect: template.redirect,
      referrer: template.referrer,
      referrerPolicy: template.referrerPolicy,
    },
    signal: signal ?? undefined,
  }
}

/** One attempt's `Request`: a fresh object each time, since a sent body cannot be reused. */
export function attemptRequest(prepared: PreparedRequest, signal: AbortSignal): Request {
  return new Request(prepared.url, {
    ...(prepared.settings as RequestInit),
    method: prepared.method,
    headers: prepared.headers,
    body: prepared.body,
    signal,
  })
}
