import { InvalidOptionError } from './errors/invalid-option.js'
import { OutcomeNotSerializableError } from './errors/outcome-not-serializable.js'
import { OutcomeTooLargeError } from './errors/outcome-too-large.js'
import { OutcomeUnreadableError } from './errors/outcome-unreadable.js'
import { nonJsonKind } from './json-data.js'
import { MIN_MAX_OUTCOME_BYTES } from '../ports/key-store.js'

/**
 * Serialises a function's result for storage. Only values with an exact JSON form are
 * accepted, because a replay must return what the first call returned: a BigInt, a
 * function, a symbol, a non-finite number, a Map, a Set or binary data would silently
 * change shape in JSON, so they are refused instead (`nonJsonKind`, the check an input's
 * fingerprint makes too). Objects with `toJSON` (such as Date) are stored
 * as their JSON form, and the engine returns the parsed form on the first call too, so
 * first call and replay always agree.
 * `undefined` is stored as `null`.
 * @throws OutcomeNotSerializableError naming the path of the offending value
 */
export function serializeOutcome(value: unknown): string {
  const root = value === undefined ? null : value
  // Plain JSON.stringify keeps V8's fast path (a replacer turns it off), and a walk of
  // the value says whether the text is what the checked path would write. Anything the
  // walk is unsure of, and every failure, takes the checked path, which says why.
  try {
    const text = JSON.stringify(root)
    if (text !== undefined && storable(root)) return text
  } catch {
    // A BigInt, a cycle, a toJSON that throws, nesting too deep: said below.
  }
  return checkedSerialize(root)
}

/**
 * Whether serialising `v` with `checkedSerialize` would find nothing to refuse, so that
 * the plain text is its text. Conservative: an object with a `toJSON` other than Date's
 * is left to the checked path (its JSON form is what counts, and it is only known by
 * calling it).
 */
function storable(v: unknown): boolean {
  if (typeof v !== 'object' || v === null) return nonJsonKind(v) === undefined
  if (typeof (v as { toJSON?: unknown }).toJSON === 'function') return isPlainDate(v)
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) if (!storable(v[i])) return false
    return true
  }
  if (nonJsonKind(v) !== undefined) return false
  for (const key in v) {
    if (Object.hasOwn(v, key) && !storable((v as Record<string, unknown>)[key])) return false
  }
  return true
}

// Date's own toJSON gives a string, or null for an invalid date: both store as they are.
const { toJSON: dateToJson, toISOString: dateToIsoString } = Date.prototype

function isPlainDate(v: object): boolean {
  return v instanceof Date && v.toJSON === dateToJson && v.toISOString === dateToIsoString
}

// JSON.stringify with a check of every value it writes (after toJSON), naming the first
// it refuses.
function checkedSerialize(root: unknown): string {
  let text: string | undefined
  try {
    text = JSON.stringify(root, function check(this: unknown, key, v: unknown) {
      const problem = nonJsonKind(v)
      if (problem !== undefined) {
        throw new OutcomeNotSerializableError(`The outcome holds ${problem} at ${JSON.stringify(key || '(root)')}; return plain JSON data`)
      }
      return v
    })
  } catch (cause) {
    if (cause instanceof OutcomeNotSerializableError) throw cause
    throw new OutcomeNotSerializableError(`The outcome cannot be serialised: ${(cause as Error).message}`, { cause })
  }
  return text ?? 'null'
}

/**
 * Parses a stored outcome or step result.
 * @throws OutcomeUnreadableError when the stored text is not JSON (a corrupted or
 *   truncated row): a replay must return what was stored or nothing at all
 */
export function parseOutcome<T>(text: string): T {
  if (typeof text !== 'string') throw new OutcomeUnreadableError(`The stored outcome is not text (got ${text === null ? 'null' : typeof text})`)
  try {
    return JSON.parse(text) as T
  } catch (cause) {
    throw new OutcomeUnreadableError(`The stored outcome is not valid JSON (${text.length} characters): the row is corrupted or truncated`, { cause })
  }
}


/**
 * Checks at creation that a store declares the largest outcome it holds (`KeyStore` and
 * `LeasedStore` `maxOutcomeBytes`).
 * @param caller what to name in the error, e.g. `createIdem`
 * @throws InvalidOptionError naming the option
 */
export function assertOutcomeLimit(caller: string, store: { readonly maxOutcomeBytes?: unknown }): void {
  const max = store.maxOutcomeBytes
  if (typeof max !== 'number' || !Number.isSafeInteger(max) || max < MIN_MAX_OUTCOME_BYTES) {
    throw new InvalidOptionError(
      `${caller}: option "store" must declare "maxOutcomeBytes", the largest outcome it holds, as a whole number of bytes ` +
        `from ${MIN_MAX_OUTCOME_BYTES}, got ${typeof max === 'number' ? String(max) : typeof max}`,
    )
  }
}

/**
 * The UTF-8 size of a serialised outcome when it is more than `max` bytes, else
 * undefined. Counted only when it could be: a UTF-16 unit is at most 3 bytes of UTF-8,
 * so an outcome of up to a third of `max` units costs one comparison.
 */
export function bytesOver(text: string, max: number): number | undefined {
  if (text.length * 3 <= max) return undefined
  const bytes = Buffer.byteLength(text, 'utf8')
  return bytes > max ? bytes : undefined
}

// What a leased call stores in place of an outcome its store cannot hold: JSON, so every
// store and wrapper keeps it as it keeps any outcome, and never what serializeOutcome
// writes (JSON.stringify puts no space between tokens), so no returned value reads as it.
const OVERSIZED = '{"idem": "outcome-too-large", '

/** Sizes of an outcome that did not fit its store. */
export interface OversizedSizes {
  readonly outcomeBytes: number
  readonly maxOutcomeBytes: number
}

/**
 * The stored record of a leased call whose outcome (or a step result) was too large for
 * its store: the call ran, so the key is completed with this, and every replay of it is
 * an `OutcomeTooLargeError` (see `replayedOversized`).
 */
export function oversizedOutcome({ outcomeBytes, maxOutcomeBytes }: OversizedSizes): string {
  return `${OVERSIZED}"outcomeBytes": ${outcomeBytes}, "maxOutcomeBytes": ${maxOutcomeBytes}}`
}

/**
 * The error a replay of `oversizedOutcome`'s record is answered with, or undefined for
 * any other stored outcome.
 */
function replayedOversized(text: string): OutcomeTooLargeError | undefined {
  if (typeof text !== 'string' || !text.startsWith(OVERSIZED)) return undefined
  const sizes = parseOutcome<OversizedSizes>(text)
  return new OutcomeTooLargeError(
    `A call with this key ran, but its outcome (${sizes.outcomeBytes} bytes) was larger than its store holds (${sizes.maxOutcomeBytes} bytes), ` +
      'so the key was recorded as completed without it; it does not run again',
    sizes,
  )
}

/**
 * A stored outcome as a replay returns it, parsed at once: a row that cannot be read
 * fails the call with `OutcomeUnreadableError` rather than surfacing later as whatever
 * reading a broken value throws, and the record of an outcome too large to keep (a
 * leased call's) with `OutcomeTooLargeError`.
 * @throws OutcomeTooLargeError / OutcomeUnreadableError
 * @example const value = replayedValue(record.outcome)
 */
export function replayedValue(text: string): unknown {
  const oversized = replayedOversized(text)
  if (oversized !== undefined) throw oversized
  return parseOutcome(text)
}
