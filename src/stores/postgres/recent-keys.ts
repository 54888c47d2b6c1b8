import { keyId } from '../../core/key.js'

/**
 * Keys a store recorded lately (committed itself), so that a retry of one can be answered by a
 * plain read (see `lookup` in sql.ts) instead of a transaction. Being wrong costs one
 * read and never a wrong answer: the read is of committed records only, and a key it
 * does not find is claimed as usual. Bounded: the oldest entries go first.
 */
export class RecentKeys {
  readonly #keys = new Set<string>()
  // The entries in the order they came, in a ring: the next to go is at #next. (Taking
  // the oldest from the Set's iterator instead costs a scan past every entry deleted
  // before it: measured 5 µs an add once full.)
  readonly #order: string[] = []
  #next = 0
  constructor(readonly limit: number) {}

  has(scope: string, key: string): boolean {
    return this.#keys.has(keyId(scope, key))
  }

  add(scope: string, key: string): void {
    const entry = keyId(scope, key)
    if (this.#keys.has(entry)) return
    if (this.#order.length < this.limit) {
      this.#order.push(entry)
    } else {
      this.#keys.delete(this.#order[this.#next]!)
      this.#order[this.#next] = entry
      this.#next = (this.#next + 1) % this.limit
    }
    this.#keys.add(entry)
  }

  /** Forgets a key (its record is gone); its place in the ring is freed when its turn comes. */
  delete(scope: string, key: string): void {
    this.#keys.delete(keyId(scope, key))
  }
}
