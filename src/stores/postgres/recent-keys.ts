/**
 * Keys a store recorded lately (committed itself), so that a retry of one can be answered by a
 * plain read (see `lookup` in sql.ts) instead of a transaction. Being wrong costs one
 * read and never a wrong answer: the read is of committed records only, and a key it
 * does not find is claimed as usual. Bounded: the oldest entries go first.
 */
export class RecentKeys {
  readonly #keys = new Set<string>()
  constructor(readonly limit: number) {}

  has(scope: string, key: string): boolean {
    return this.#keys.has(id(scope, key))
  }

  add(scope: string, key: string): void {
    const entry = id(scope, key)
    if (this.#keys.has(entry)) return
    if (this.#keys.size >= this.limit) this.#keys.delete(this.#keys.values().next().value!)
    this.#keys.add(entry)
  }

  delete(scope: string, key: string): void {
    this.#keys.delete(id(scope, key))
  }
}

// Length-prefixed, so ("ab", "c") and ("a", "bc") stay apart.
function id(scope: string, key: string): string {
  return `${scope.length}:${scope}${key}`
}
