import { InvalidOptionError } from '../core/errors/invalid-option.js'

/** One piece of an intent: strings and numbers are told apart, so `1` and `'1'` differ. */
export type IntentPart = string | number

const encoder = new TextEncoder()

/**
 * Derives a stable idempotency key from what the user meant to do, for the cases where
 * the key cannot be minted once and kept: a UI where a double tap fires two submits of
 * the same form, or queued work re-enqueued by a producer that crashed. Same namespace
 * and parts → same key, so both arrive as one intent and the server runs it once.
 *
 * Pick parts that identify the *intent*, not the attempt: a form instance id minted
 * when the form was rendered, a cart id and its version, a message id. Never a
 * timestamp taken at submit time (a double tap would get two keys).
 *
 * The key is SHA-256 over the namespace and the parts, each length-prefixed and tagged
 * with its type (so `('a', 'bc')` and `('ab', 'c')` differ), shaped as an RFC 9562
 * UUIDv8: 36 visible ASCII characters, well inside the 255 the header allows.
 * Uses `crypto.subtle`, so it runs in browsers, workers and Node alike.
 *
 * @param namespace what kind of intent this is (`'checkout'`, `'invite-user'`): keeps
 *   two features that happen to share an id from sharing a key
 * @param parts at least one value identifying the intent
 * @throws InvalidOptionError when the namespace is empty or there are no parts
 * @example
 * // Rendered once with the form; every submit of this form instance is one intent.
 * const formId = crypto.randomUUID()
 * const key = await keyFromIntent('checkout', cartId, formId)
 * await client.fetch('/orders', { method: 'POST', body }, { key })
 */
export async function keyFromIntent(namespace: string, ...parts: IntentPart[]): Promise<string> {
  if (typeof namespace !== 'string' || namespace.length === 0) {
    throw new InvalidOptionError('keyFromIntent: "namespace" must be a non-empty string')
  }
  if (parts.length === 0) {
    throw new InvalidOptionError('keyFromIntent: give at least one part identifying the intent; a namespace alone would make every intent one')
  }
  const chunks: Uint8Array[] = [frame('N', namespace)]
  parts.forEach((part, index) => {
    if (typeof part === 'string') chunks.push(frame('s', part))
    else if (typeof part === 'number' && Number.isFinite(part)) chunks.push(frame('n', String(part)))
    else throw new InvalidOptionError(`keyFromIntent: part ${index} must be a string or a finite number`)
  })
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', concat(chunks)))
  return uuidV8(digest)
}

// tag (1 byte) + length (4 bytes, big-endian) + UTF-8 bytes: no two different part
// lists can produce the same byte string.
function frame(tag: string, text: string): Uint8Array {
  const bytes = encoder.encode(text)
  const out = new Uint8Array(5 + bytes.length)
  out[0] = tag.charCodeAt(0)
  new DataView(out.buffer).setUint32(1, bytes.length)
  out.set(bytes, 5)
  return out
}

function concat(chunks: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0))
  let offset = 0
  for (const chunk of chunks) {
    out.set(chunk, offset)
    offset += chunk.length
  }
  return out
}

// RFC 9562 §5.8: version 8 ("custom") in the high nibble of byte 6, variant 10 in the
// top bits of byte 8; the other 122 bits come from the hash.
function uuidV8(hash: Uint8Array): string {
  const b = hash.slice(0, 16)
  b[6] = ((b[6] as number) & 0x0f) | 0x80
  b[8] = ((b[8] as number) & 0x3f) | 0x80
  const hex = Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}
