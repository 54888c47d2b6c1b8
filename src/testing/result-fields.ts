import type { RunResult } from '../core/engine.js'

/**
 * A call's result as plain data, for comparing with an expected one: the engine's result
 * reads its value lazily and prints it through its prototype, which a deep comparison
 * would count as a difference.
 */
export function resultFields<T>(result: RunResult<T>): { value: T; replayed: boolean; stored: boolean } {
  return { value: result.value, replayed: result.replayed, stored: result.stored }
}
