// The three HTTP-date forms (RFC 9110 §5.6.7). Date.parse alone would accept almost any
// text ("2024", "1.5"), and a misread Retry-After could stall a client for years.
const IMF_FIXDATE = /^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/
const RFC850_DATE = /^[A-Z][a-z]+, \d{2}-[A-Z][a-z]{2}-\d{2} \d{2}:\d{2}:\d{2} GMT$/
const ASCTIME_DATE = /^[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2} \d{4}$/
const DELTA_SECONDS = /^\d+$/

/**
 * Reads a `Retry-After` header (RFC 9110 §10.2.3): delta-seconds or an HTTP-date.
 *
 * @param value the header value, or null when absent
 * @param now the current time in epoch milliseconds (a date in the past means "now")
 * @returns how many milliseconds to wait, or undefined when the header is absent or
 *   malformed (the caller then falls back to its own backoff)
 * @example parseRetryAfter('3', Date.now()) // → 3000
 * @example parseRetryAfter('Wed, 21 Oct 2015 07:28:00 GMT', Date.parse('Wed, 21 Oct 2015 07:27:58 GMT')) // → 2000
 */
export function parseRetryAfter(value: string | null | undefined, now: number): number | undefined {
  if (value === null || value === undefined) return undefined
  const text = value.trim()
  if (DELTA_SECONDS.test(text)) return Number(text) * 1000
  if (IMF_FIXDATE.test(text) || RFC850_DATE.test(text) || ASCTIME_DATE.test(text)) {
    const at = Date.parse(text)
    if (Number.isNaN(at)) return undefined
    return Math.max(0, at - now)
  }
  return undefined
}
