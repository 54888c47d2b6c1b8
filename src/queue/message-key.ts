import { createHash } from 'node:crypto'
import { MAX_KEY_LENGTH } from '../core/key.js'

const VISIBLE_ASCII = /^[\x21-\x7e]+$/

/**
 * The engine key for a message id. Broker ids that already fit the key syntax (1–255
 * visible ASCII: UUIDs, `evt_…`, stream ids, `topic-partition-offset`) are used as
 * they are, so a DBA can find a message by its id; anything else (long, Unicode,
 * spaces) becomes the SHA-256 hex of its UTF-8 bytes, prefixed so it never equals an
 * id that was used as is.
 * @example messageKey('evt_1NG8Du2eZvKYlo2CUIsh1Q7U') // → 'evt_1NG8Du2eZvKYlo2CUIsh1Q7U'
 * @example messageKey('x'.repeat(300)) // → 'sha256:…' (64 hex digits)
 */
export function messageKey(id: string): string {
  if (id.length <= MAX_KEY_LENGTH && VISIBLE_ASCII.test(id) && !id.startsWith('sha256:')) return id
  return `sha256:${createHash('sha256').update(id, 'utf8').digest('hex')}`
}
