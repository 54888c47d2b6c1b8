/**
 * The body limit (`maxBodyBytes`): its default, the error past it, and a body read from
 * its source to the limit (a Web stream without a declared length, web.ts; a decoded
 * body, content-coding.ts; a Node stream reads itself, node-request.ts).
 */
import { BodyTooLargeError } from './body-too-large.js'

/** 1 MiB: the default largest body the middleware buffers to fingerprint. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024

/** The bytes of a request without a body: one shared empty array (it has nothing to change). */
export const EMPTY_BODY = new Uint8Array(0)

/** Where a body comes from, one chunk at a time: a Web stream, or a decoder's output. */
export interface BodySource {
  /** The next chunk, or `undefined` at the end. */
  read(): Promise<Uint8Array | undefined>
  /** Stops reading; the rest of the body is left unread. */
  cancel(): void
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
      // Stop reading instead of draining the rest.
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
