import { BodyTooLargeError } from './body-too-large.js'

/** 1 MiB: the default largest body the middleware buffers to fingerprint. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024

/** The bytes of a request without a body: one shared empty array (it has nothing to change). */
export const EMPTY_BODY = new Uint8Array(0)

/** A copy of `request` carrying `body`, the bytes already read from it. */
export function withRequestBody(request: Request, body: Uint8Array): Request {
  // From its parts rather than `new Request(request, …)`: runtimes with lazy requests
  // (such as @hono/node-server's) then need not build a full copy of the original first.
  // No `signal`: a client that disconnects must not cut a protected route short (its
  // outcome is what the retry will replay), and following the signal cost ~35 µs a request.
  return new Request(request.url, { method: request.method, headers: request.headers, body })
}

/** Where a request's body comes from, one chunk at a time: a Web stream, or Node's stream read directly. */
export interface BodySource {
  /** The next chunk, or `undefined` at the end. */
  read(): Promise<Uint8Array | undefined>
  /** Stops reading; the rest of the body is left unread. */
  cancel(): void
}

/**
 * Reads a Web request's body into memory, at most `limit` bytes (see `readSource`). A
 * declared length within the limit is read whole, which runtimes do faster than chunk
 * by chunk.
 * @throws BodyTooLargeError
 */
export async function readBody(request: Request, limit: number): Promise<Uint8Array> {
  const declared = request.headers.get('content-length')
  if (declared !== null) {
    if (Number(declared) > limit) throw tooLarge(limit)
    // A server holds the client to the declared length; a hand-made Request can declare
    // less than it carries, so the size is checked again.
    const body = new Uint8Array(await request.arrayBuffer())
    if (body.byteLength > limit) throw tooLarge(limit)
    return body
  }
  if (request.body === null) return EMPTY_BODY
  const reader = request.body.getReader()
  return readSource(
    {
      read: async () => {
        const { done, value } = await reader.read()
        return done ? undefined : value
      },
      cancel: () => {
        reader.cancel().catch(() => {})
      },
    },
    limit,
  )
}

/**
 * Reads a body into memory, at most `limit` bytes: counted as it arrives and refused as
 * soon as it passes the limit (with the error `refuse` makes), so a client cannot make
 * the server buffer more.
 * @throws BodyTooLargeError
 */
export async function readSource(source: BodySource, limit: number, refuse: (limit: number) => BodyTooLargeError = tooLarge): Promise<Uint8Array> {
  const chunks: Uint8Array[] = []
  let size = 0
  for (let chunk = await source.read(); chunk !== undefined; chunk = await source.read()) {
    size += chunk.byteLength
    if (size > limit) {
      // Stop the upload instead of draining it; a Node adapter closes the connection.
      source.cancel()
      throw refuse(limit)
    }
    chunks.push(chunk)
  }
  if (chunks.length === 0) return EMPTY_BODY
  if (chunks.length === 1) return chunks[0]!
  return Buffer.concat(chunks, size)
}

/** The error for a body over `maxBodyBytes`. */
export function tooLarge(limit: number): BodyTooLargeError {
  return new BodyTooLargeError(`The request body is larger than ${limit} bytes (maxBodyBytes)`)
}
