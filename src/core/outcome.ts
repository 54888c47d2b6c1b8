import { OutcomeNotSerializableError } from './errors/outcome-not-serializable.js'
import { OutcomeUnreadableError } from './errors/outcome-unreadable.js'

/**
 * Serialises a function's result for storage. Only values with an exact JSON form are
 * accepted, because a replay must return what the first call returned: a BigInt, a
 * function, a symbol, a non-finite number, a Map or a Set would silently change shape
 * in JSON, so they are refused instead. Objects with `toJSON` (such as Date) are stored
 * as their JSON form, and the engine returns the parsed form on the first call too, so
 * first call and replay always agree.
 * `undefined` is stored as `null`.
 * @throws OutcomeNotSerializableError naming the path of the offending value
 */
export function serializeOutcome(value: unknown): string {
  let text: string | undefined
  try {
    text = JSON.stringify(value === undefined ? null : value, function check(this: unknown, key, v: unknown) {
      const problem = describeUnstorable(v)
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

function describeUnstorable(v: unknown): string | undefined {
  switch (typeof v) {
    case 'bigint':
      return 'a BigInt'
    case 'function':
      return 'a function'
    case 'symbol':
      return 'a symbol'
    case 'number':
      return Number.isFinite(v) ? undefined : `the number ${v}`
    case 'object':
      if (v instanceof Map) return 'a Map'
      if (v instanceof Set) return 'a Set'
      if (ArrayBuffer.isView(v)) return 'binary data (encode it, e.g. as base64)'
      return undefined
    default:
      return undefined
  }
}
