import { InvalidOptionError } from './errors/invalid-option.js'
import { assertIdentity } from './identity.js'

/**
 * The longest duration any option accepts: 2³¹ − 1 ms (about 24.8 days). It is the
 * longest a Node timer can wait (a longer one fires at once) and the largest
 * Postgres `integer`, so one bound keeps every duration usable wherever it goes:
 * a lock timeout, a lease, a timer, a retention.
 */
export const MAX_DURATION_MS = 2 ** 31 - 1

/**
 * Checks a duration option: a whole number of milliseconds from `min` to
 * `MAX_DURATION_MS`.
 * @param option what to name in the error, e.g. `createIdem: option "ttlMs"`
 * @throws InvalidOptionError naming the option, what it must be and what it got
 */
export function assertDuration(option: string, value: unknown, min = 0): asserts value is number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > MAX_DURATION_MS) {
    throw new InvalidOptionError(
      `${option} must be a whole number of milliseconds from ${min} to ${MAX_DURATION_MS} (about 24.8 days), got ${shown(value)}`,
    )
  }
}

/**
 * Checks a count option: a whole number from `min` to `max`.
 * @throws InvalidOptionError naming the option
 */
export function assertCount(option: string, value: unknown, min: number, max = 1_000_000): asserts value is number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new InvalidOptionError(`${option} must be a whole number from ${min} to ${max}, got ${shown(value)}`)
  }
}

/**
 * Checks a name stored as text (consumer, topic, dedupe key, queue): an identity of
 * 1–`max` characters, without NUL, well-formed UTF-16 (see `assertIdentity`).
 * @throws InvalidOptionError naming the option
 */
export function assertName(option: string, value: unknown, max = 200): asserts value is string {
  assertIdentity(option, value, max, InvalidOptionError)
}

/** A value as an error message shows it: strings quoted, functions named as such. */
export function shown(value: unknown): string {
  if (typeof value === 'function') return 'a function'
  if (typeof value === 'string') return JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value)
  if (typeof value === 'bigint') return `${value}n`
  if (typeof value === 'object' && value !== null) return Array.isArray(value) ? 'an array' : 'an object'
  return String(value)
}

/**
 * Checks that `options` names only `known` options, so a typo (`maxAtempts`) fails at
 * start-up instead of being silently ignored; the error suggests the nearest name.
 * @param caller what to name in the error, e.g. `createClient`
 * @throws InvalidOptionError naming the unknown option
 */
export function assertKnownOptions(caller: string, options: object, known: readonly string[]): void {
  for (const name of Object.keys(options)) {
    if (known.includes(name)) continue
    const nearest = nearestName(name, known)
    const hint = nearest === undefined ? '' : `; did you mean "${nearest}"?`
    throw new InvalidOptionError(`${caller}: "${name}" is not an option${hint} (known: ${known.join(', ')})`)
  }
}

// The known name within a few edits of `name` (Damerau-free Levenshtein), if any.
function nearestName(name: string, known: readonly string[]): string | undefined {
  let best: string | undefined
  let bestDistance = Math.max(2, Math.floor(name.length / 3)) + 1
  for (const candidate of known) {
    const distance = editDistance(name.toLowerCase(), candidate.toLowerCase())
    if (distance < bestDistance) {
      best = candidate
      bestDistance = distance
    }
  }
  return best
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i)
  for (let i = 1; i <= a.length; i++) {
    const current = [i]
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1))
    }
    previous = current
  }
  return previous[b.length]!
}
