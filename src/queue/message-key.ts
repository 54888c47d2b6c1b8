import { createHash } from 'node:crypto'
import { InvalidKeyError } from '../core/errors/invalid-key.js'
import { assertWellFormed } from '../core/identity.js'
import { isKeySyntax } from '../core/identity.js'

/**
 * The engine key for a message id. Broker ids that already fit the key syntax (1–255
 * visible ASCII: UUIDs, `evt_…`, stream ids, `topic-partition-offset@timestamp`) are used
 * as they are, so a DBA can find a message by its id; anything else (long, Unicode,
 * spaces) becomes the SHA-256 hex of its UTF-8 bytes, prefixed so it never equals an
 * id that was used as is.
 * @throws InvalidKeyError for an id that is not well-formed UTF-16 (a lone surrogate has
 *   no UTF-8 form, so `"evt-\ud800"` and `"evt-\udc00"` would share one key); the inbox
 *   dead-letters such a message under `refusedMessageKey`
 * @example messageKey('evt_1NG8Du2eZvKYlo2CUIsh1Q7U') // → 'evt_1NG8Du2eZvKYlo2CUIsh1Q7U'
 * @example messageKey('x'.repeat(300)) // → 'sha256:…' (64 hex digits)
 */
export function messageKey(id: string): string {
  if (isKeySyntax(id) && !id.startsWith('sha256:')) return id
  assertWellFormed(`message id ${JSON.stringify(id.length > 80 ? `${id.slice(0, 80)}…` : id)}`, id, InvalidKeyError)
  return `sha256:${createHash('sha256').update(id, 'utf8').digest('hex')}`
}

/**
 * The key a message whose id `messageKey` refused is dead-lettered under: the SHA-256 of
 * a 0xFF byte and the id's UTF-16 code units, which keeps every refused id apart (lone
 * surrogates included) and can never equal the hash of a well-formed id (its UTF-8 bytes
 * never hold 0xFF). A redelivery of the message finds its own dead letter.
 */
export function refusedMessageKey(id: string): string {
  return `sha256:${createHash('sha256').update(Uint8Array.of(0xff)).update(Buffer.from(id, 'utf16le')).digest('hex')}`
}
