/**
 * The body of a response made by `@hono/node-server`'s lightweight `Response`, read
 * without materialising it. That server replaces the global `Response` with a class
 * that keeps `[status, body, headers]` under a private symbol and only builds Node's
 * (undici) Response when something reads it; reading the body the standard way costs
 * a Response, a ReadableStream and a stream read, about 70 µs a request, and pushes the
 * server off its fast path for writing the answer. Nothing here is public API of that
 * server, so every assumption is checked, and any other response gets `undefined`: the
 * caller then reads the body the standard way.
 */
import type { HttpBody } from './exchange.js'

// The server's symbol, found on the first lightweight response seen.
let cacheSymbol: symbol | undefined

/** The body of a lightweight response whose body is text or bytes; `undefined` for any other response. */
export function lightweightBody(response: Response): HttpBody | undefined {
  if (cacheSymbol === undefined) {
    cacheSymbol = Object.getOwnPropertySymbols(response).find((symbol) => symbol.description === 'cache')
    if (cacheSymbol === undefined) return undefined
  }
  const cache: unknown = Reflect.get(response, cacheSymbol)
  if (!Array.isArray(cache) || cache.length !== 3 || cache[0] !== response.status) return undefined
  const body: unknown = cache[1]
  if (body === null) return ''
  if (typeof body === 'string' || body instanceof Uint8Array) return body
  return undefined // a stream or a Blob: only the standard reader gets it whole
}
