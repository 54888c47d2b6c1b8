/**
 * Content codings (RFC 9110 §8.4) undone for the fingerprint, so that a body sent
 * gzipped is the same request as the same body sent plain, or gzipped again with another
 * time in its header. Decoding streams through `node:zlib`, which Node, Bun and Deno all
 * implement and which hands its output over in 16 KiB pieces, and stops as soon as the
 * output passes the body limit: a small body that inflates to gigabytes costs no more
 * memory than the limit. The Web `DecompressionStream` is not used: Deno's inflates a
 * whole write at once (10 KB of gzipped zeros came out as one 10 MB chunk, before
 * anything could count it), and Node 20's has no brotli.
 */
import type { Transform } from 'node:stream'
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib'
import { BodyTooLargeError } from './body-too-large.js'
import { readSource } from './body.js'
import { CorruptBodyError } from './corrupt-body.js'
import { DECODED_CODINGS, UnsupportedEncodingError } from './unsupported-encoding.js'

/** A content coding the middleware decodes. */
export type ContentCoding = 'gzip' | 'deflate' | 'br'

/** The most codings undone one after another: each is a pass over up to `maxBodyBytes`. */
export const MAX_CODINGS = 3

// `deflate` is the zlib format (RFC 9110 §8.4.1.2), as Express's body parsers read it.
const CODINGS: ReadonlyMap<string, ContentCoding | 'identity'> = new Map([
  ['gzip', 'gzip'],
  ['x-gzip', 'gzip'],
  ['deflate', 'deflate'],
  ['br', 'br'],
  ['identity', 'identity'],
])

const DECODERS: Readonly<Record<ContentCoding, () => Transform>> = { gzip: createGunzip, deflate: createInflate, br: createBrotliDecompress }

/**
 * The codings a `Content-Encoding` value lists, in the order they were applied. Case does
 * not count (RFC 9110 §8.4.1); `identity` and empty list elements are no coding.
 * @throws UnsupportedEncodingError for a coding idem does not decode, or more than `MAX_CODINGS`
 */
export function contentCodings(header: string): ContentCoding[] {
  const codings: ContentCoding[] = []
  for (const element of header.split(',')) {
    const name = element.trim().toLowerCase()
    if (name === '') continue
    const coding = CODINGS.get(name)
    if (coding === undefined) {
      const shown = name.length > 32 ? `${name.slice(0, 32)}…` : name
      throw new UnsupportedEncodingError(`The request body's Content-Encoding ${JSON.stringify(shown)} is not one this server decodes (${DECODED_CODINGS})`)
    }
    if (coding !== 'identity') codings.push(coding)
  }
  if (codings.length > MAX_CODINGS) {
    throw new UnsupportedEncodingError(`The request body is encoded ${codings.length} times (Content-Encoding); this server decodes at most ${MAX_CODINGS} codings`)
  }
  return codings
}

/**
 * The body with `codings` undone, the last applied first; each pass holds at most
 * `limit` bytes of output, and stops reading as soon as it would hold more.
 * @throws BodyTooLargeError when a pass gives more than `limit` bytes
 * @throws CorruptBodyError when the bytes are not what a coding makes
 */
export async function decodeContent(body: Uint8Array, codings: readonly ContentCoding[], limit: number): Promise<Uint8Array> {
  // No bytes have nothing to undo (zlib would call an empty stream truncated).
  if (body.byteLength === 0) return body
  let bytes = body
  for (let i = codings.length - 1; i >= 0; i--) bytes = await decoded(bytes, codings[i]!, limit)
  return bytes
}

async function decoded(bytes: Uint8Array, coding: ContentCoding, limit: number): Promise<Uint8Array> {
  const stream = DECODERS[coding]()
  // Read on demand: the decoder is not asked for more once the limit is passed.
  const output: AsyncIterator<Uint8Array> = stream[Symbol.asyncIterator]()
  stream.end(bytes)
  try {
    return await readSource({ read: async () => (await output.next()).value, cancel: () => stream.destroy() }, limit, decodedTooLarge)
  } catch (error) {
    if (error instanceof BodyTooLargeError) throw error
    throw new CorruptBodyError(`The request body is not valid ${coding} data, which its Content-Encoding says it is`, { cause: error })
  }
}

function decodedTooLarge(limit: number): BodyTooLargeError {
  return new BodyTooLargeError(`The request body is larger than ${limit} bytes (maxBodyBytes) once decoded (Content-Encoding)`)
}
