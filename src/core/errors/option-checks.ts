import { InvalidOptionError } from './invalid-option.js'
import { assertIdentity } from '../identity.js'

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

/** The option names one function accepts, made once when its module loads (see `optionNames`). */
export type KnownOptions = ReadonlySet<string>

/**
 * The option names of the options type `T`, for `assertKnownOptions`. Make it once, at
 * module load, next to the function it checks. The record lists every option of `T` and
 * nothing else, so the compiler refuses it when `T` gains an option it does not list
 * (or it lists one `T` lacks): the list cannot fall behind the type. For example,
 * `optionNames<RedisStoreOptions>({ client: true, prefix: true, … })` next to `redisStore`.
 */
export function optionNames<T extends object>(names: { readonly [K in keyof T]-?: true }): KnownOptions {
  return new Set(Object.keys(names))
}

/**
 * Checks that `options` is an object naming only `known` options, so a typo
 * (`maxAtempts`) fails where it is made instead of being silently ignored; the error
 * suggests the nearest known name. Every public function that takes an options object
 * calls it first, before reading any option. Cheap enough for a per-call options object
 * (an engine call's): it walks the object's few keys and looks each up in a set, about
 * 50 ns for `run`'s four on Node 20, against the tens of microseconds of the call; the
 * suggestion is only worked out for a name that is not known. Objects idem builds
 * itself on the request path are not checked again (see `hashRequest`).
 * @param caller what to name in the error, e.g. `createClient`, or `createDispatcher: option "backoff"` for a nested object
 * @throws InvalidOptionError naming the unknown option
 */
export function assertKnownOptions(caller: string, options: unknown, known: KnownOptions): asserts options is object {
  if (options === null || typeof options !== 'object') {
    throw new InvalidOptionError(`${caller}: the options must be an object (${[...known].join(', ')}), got ${shown(options)}`)
  }
  // for…in, not Object.keys: it sees inherited enumerable names too, as destructuring the options reads them.
  for (const name in options) {
    if (!known.has(name)) throw unknownOption(caller, name, known)
  }
}

function unknownOption(caller: string, name: string, known: KnownOptions): InvalidOptionError {
  const nearest = nearestName(name, known)
  const hint = nearest === undefined ? '' : `; did you mean "${nearest}"?`
  return new InvalidOptionError(`${caller}: "${name}" is not an option${hint} (known: ${[...known].join(', ')})`)
}

// The known name within a few edits of `name` (Damerau-free Levenshtein), if any.
function nearestName(name: string, known: KnownOptions): string | undefined {
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
