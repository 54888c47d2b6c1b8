// Fatal: bytes that are not UTF-8 must not be read as U+FFFD. ignoreBOM keeps a leading
// U+FEFF, so "\uFEFFa" and "a" stay two ids.
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

/** What starts an id written as the hex digits of its bytes (`idFromBytes`). */
export const BYTE_ID_PREFIX = 'hex:'

/**
 * A broker id that arrives as bytes (a Kafka header), as text the inbox can key: the
 * bytes read as UTF-8 when they are valid UTF-8, else `hex:` and their hex digits
 * (`0xff01` → `hex:ff01`). Text that itself starts with `hex:` is written in hex too, so
 * the two forms never meet: different bytes always give different ids, and the same
 * bytes (a redelivery) the same id. Decoding with replacement would read `0xff01` and
 * `0xfe01` both as `"\uFFFD\u0001"`, and drop the second message as a duplicate.
 * @example idFromBytes(Buffer.from('order-42')) // → 'order-42'
 * @example idFromBytes(Uint8Array.of(0xff, 0x01)) // → 'hex:ff01'
 */
export function idFromBytes(bytes: Uint8Array): string {
  let text: string | undefined
  try {
    text = utf8.decode(bytes)
  } catch {
    text = undefined
  }
  if (text !== undefined && !text.startsWith(BYTE_ID_PREFIX)) return text
  return `${BYTE_ID_PREFIX}${Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex')}`
}
