/**
 * The one rule for a response header field that idem stores and replays. The stored form
 * applies it when it writes a response and again when it reads one back
 * (stored-response.ts), so what any front end stores it can always read; each front end
 * then sends a stored value the way its platform can (`wireValue` for a byte wire).
 */

/** A header field in its stored form, or why it has none. */
export type StoredField = { readonly ok: true; readonly name: string; readonly value: string } | { readonly ok: false; readonly reason: string }

// RFC 9110 §5.1: a field name is a token.
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/
// Control characters but HTAB: CR, LF and NUL end or break a field on the wire, and no
// platform sends the others (DEL among them).
const CONTROL = /[\x00-\x08\x0a-\x1f\x7f]/

/**
 * A header field as idem stores it: the name a token, in lower case; the value without
 * the spaces and tabs around it (RFC 9110 §5.5: they are not part of it), holding any
 * character but a control character other than HTAB. Unicode text is kept as text (a
 * Lambda function's `filename="报告.pdf"`), and so are the Latin-1 characters of rows
 * written before (obs-text: bytes, as Node reads them); a lone surrogate is stored as
 * U+FFFD, as it is sent.
 * @example storedField('Cache-Control', 'no-store ') // { ok: true, name: 'cache-control', value: 'no-store' }
 */
export function storedField(name: string, value: string): StoredField {
  if (!TOKEN.test(name)) return { ok: false, reason: 'its name is not a token' }
  const trimmed = withoutEdgeSpace(value)
  if (CONTROL.test(trimmed)) return { ok: false, reason: 'its value holds a control character (CR, LF, NUL and the like)' }
  return { ok: true, name: name.toLowerCase(), value: trimmed.toWellFormed() }
}

// The value without the spaces and tabs around it; most have none, and are not copied.
function withoutEdgeSpace(value: string): string {
  let start = 0
  let end = value.length
  while (start < end && isSpace(value.charCodeAt(start))) start++
  while (end > start && isSpace(value.charCodeAt(end - 1))) end--
  return start === 0 && end === value.length ? value : value.slice(start, end)
}

const isSpace = (code: number): boolean => code === 0x20 || code === 0x09

/**
 * A stored value as a byte wire carries it, for the front ends whose headers are bytes
 * (Node writes a header string one byte per character, as Latin-1; a Web `Headers` holds
 * ByteStrings): a value holding a character above U+00FF, text a Lambda function
 * answered, as its UTF-8 bytes, one character per byte; any other as it is, each
 * character the byte it stood for when it was read.
 * @example wireValue('attachment; filename="报告.pdf"') // 'attachment; filename="æ\u008a¥å\u0091\u008a.pdf"'
 */
export function wireValue(value: string): string {
  for (let i = 0; i < value.length; i++) if (value.charCodeAt(i) > 0xff) return Buffer.from(value, 'utf8').toString('latin1')
  return value
}
