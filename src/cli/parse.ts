import { InvalidArgumentError } from 'commander'

/**
 * Option parsers for commander: each refuses a malformed value with a message commander
 * prints after the flag's own name (`option '--batch-size <n>' argument 'abc' is invalid.`).
 */

/** A whole number from `min` to `max`. */
export function count(min: number, max = 1_000_000): (value: string) => number {
  return (value) => {
    const n = Number(value)
    if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < min || n > max) {
      throw new InvalidArgumentError(`Expected a whole number from ${min} to ${max}.`)
    }
    return n
  }
}

const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }

/** A duration such as `90s`, `15m`, `24h` or `14d` (a bare number is milliseconds), in milliseconds. */
export function duration(value: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/.exec(value.trim())
  const ms = match ? Math.round(Number(match[1]) * UNITS[match[2] ?? 'ms']!) : NaN
  if (!Number.isSafeInteger(ms) || ms < 0 || ms > 2 ** 31 - 1) {
    throw new InvalidArgumentError('Expected a duration such as 90s, 15m, 24h or 14d (at most 24 days).')
  }
  return ms
}

/** A rate from 0 to 1 (`0.0001` is 0.01%), or a percentage (`0.01%`). */
export function rate(value: string): number {
  const percent = value.trim().endsWith('%')
  const n = Number(percent ? value.trim().slice(0, -1) : value)
  const r = percent ? n / 100 : n
  if (value.trim() === '' || !Number.isFinite(r) || r < 0 || r > 1) {
    throw new InvalidArgumentError('Expected a rate from 0 to 1 (0.0001) or a percentage (0.01%).')
  }
  return r
}

/** A list such as `a,b,c`, trimmed, without empty entries. */
export function list(value: string): string[] {
  const items = value.split(',').map((item) => item.trim()).filter((item) => item.length > 0)
  if (items.length === 0) throw new InvalidArgumentError('Expected a comma-separated list, such as a,b.')
  return items
}

/** A plain SQL identifier: letters, digits and _, not starting with a digit. */
export function identifier(value: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(value)) {
    throw new InvalidArgumentError(`Expected a plain SQL identifier (letters, digits, _; at most 63), got ${JSON.stringify(value)}.`)
  }
  return value
}

/** An http(s) URL (a service's `/metrics`). */
export function httpUrl(value: string): string {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    throw new InvalidArgumentError('Expected an http(s) URL, such as http://127.0.0.1:3000/metrics.')
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new InvalidArgumentError('Expected an http(s) URL, such as http://127.0.0.1:3000/metrics.')
  return url.href
}

/** Thousands separated, for people. */
export const grouped = (n: number): string => Math.round(n).toLocaleString('en-US')

/** `1.2 MB` and the like. */
export function bytes(n: number | null): string {
  if (n === null) return 'unknown'
  const units = ['B', 'kB', 'MB', 'GB', 'TB']
  let i = 0
  let v = n
  while (v >= 1000 && i < units.length - 1) {
    v /= 1000
    i++
  }
  return `${i === 0 ? v : v.toPrecision(3)} ${units[i]}`
}

/** A duration for people: `3.2 s`, `4 min`, `2.5 h`, `3 d`. */
export function human(ms: number): string {
  const a = Math.abs(ms)
  if (a < 1_000) return `${Math.round(ms)} ms`
  if (a < 60_000) return `${(ms / 1_000).toPrecision(2)} s`
  if (a < 3_600_000) return `${Math.round(ms / 60_000)} min`
  if (a < 86_400_000) return `${(ms / 3_600_000).toPrecision(2)} h`
  return `${(ms / 86_400_000).toPrecision(2)} d`
}
