/**
 * Keys a store recorded lately (committed itself), so that a retry of one can be answered
 * by a plain read (`lookup` in key-sessions/index.ts, its SQL in dialect/keys.ts) instead of
 * a transaction. Being wrong costs one read and never a wrong answer: the read is of
 * committed records only, and a key it does not find is claimed as usual. Bounded: the
 * oldest entries go first.
 */
export class RecentKeys {
  // Keys by scope, rather than one set of joined strings: a scope is usually one string
  // used over and over, and a key the same string from the check to the add, so each
  // keeps its hash and nothing is built per call (a joined string cost a few µs a call).
  readonly #scopes = new Map<string, Set<string>>()
  // The entries in the order they came, in a ring: the next to go is at #next. (Taking
  // the oldest from a Set's iterator instead costs a scan past every entry deleted
  // before it: measured 5 µs an add once full.)
  readonly #orderScopes: string[] = []
  readonly #orderKeys: string[] = []
  #next = 0
  constructor(readonly limit: number) {}

  has(scope: string, key: string): boolean {
    return this.#scopes.get(scope)?.has(key) === true
  }

  add(scope: string, key: string): void {
    if (this.has(scope, key)) return
    if (this.#orderKeys.length < this.limit) {
      this.#orderScopes.push(scope)
      this.#orderKeys.push(key)
    } else {
      // The oldest goes first, before this key's set is looked up: it may empty that set.
      this.delete(this.#orderScopes[this.#next]!, this.#orderKeys[this.#next]!)
      this.#orderScopes[this.#next] = scope
      this.#orderKeys[this.#next] = key
      this.#next = (this.#next + 1) % this.limit
    }
    let keys = this.#scopes.get(scope)
    if (keys === undefined) this.#scopes.set(scope, (keys = new Set()))
    keys.add(key)
  }

  /** Forgets a key (its record is gone); its place in the ring is freed when its turn comes. */
  delete(scope: string, key: string): void {
    const keys = this.#scopes.get(scope)
    if (keys === undefined || !keys.delete(key)) return
    if (keys.size === 0) this.#scopes.delete(scope)
  }
}
