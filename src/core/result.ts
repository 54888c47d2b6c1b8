const DISCARDED = Symbol('idem.discarded')

/**
 * What an engine call's function returns to say "roll back and do not store this
 * value": its effects and the key are rolled back (transactional) or the claim is
 * handled as after a failure (leased), and the caller gets `value` back unstored, so a
 * retry runs again. A front end returns a transient failure this way. A typed value, not an
 * exception, so no front end needs a private error to thread through the engine.
 */
export interface Discarded<T> {
  readonly [DISCARDED]: true
  readonly value: T
}

/**
 * Marks `value` as not to be stored (see `Discarded`).
 * @example
 * await idem.run(call, async (tx) => {
 *   const result = await charge(tx)
 *   return result.transient ? discard(result) : result
 * })
 */
export function discard<T>(value: T): Discarded<T> {
  return { [DISCARDED]: true, value }
}

/**
 * True for what `discard` made.
 * @example
 * if (isDiscarded(returned)) return returned.value // nothing was stored
 */
export function isDiscarded<T>(value: T | Discarded<T>): value is Discarded<T> {
  return typeof value === 'object' && value !== null && (value as Partial<Discarded<T>>)[DISCARDED] === true
}
