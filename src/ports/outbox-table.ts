/**
 * The outbox's port: what `createOutbox` and `createDispatcher` need of a store. This
 * comment is the specification; `outboxTableContract` in `idem/testing` checks it.
 *
 * A table keeps one row per queued effect: its topic, dedupe key, JSON payload, the
 * attempts made, when the next attempt is due, who holds it (a claim id and until
 * when), its last error, and when it was delivered.
 *
 * Rules every table follows:
 * - **Queued with the caller's writes.** `add` writes in the caller's open transaction,
 *   so the effect is owed exactly when the caller's other writes commit. A second `add`
 *   of the same `(topic, dedupeKey)` changes nothing and returns false.
 * - **Claims are leases.** `claim` takes up to `limit` due, undelivered rows that no
 *   live claim holds, counts an attempt on each, and holds them for `leaseMs`: nobody
 *   else can claim them until then. Rows another claim is taking right now are skipped,
 *   never waited for.
 * - **Compare-and-set on the claim.** `renew`, `delivered`, `retry` and `deadLetter`
 *   change a row only while `claimId` still holds it; otherwise they change nothing.
 * - **Time** is the store's own clock. Durations are integer milliseconds.
 * - **Failures.** `StoreUnavailableError` when the backend cannot be reached,
 *   `MigrationRequiredError` when its tables are missing.
 */
export interface OutboxTable<Tx, Added extends boolean | Promise<boolean> = Promise<boolean>> {
  /** False for a table that cannot filter claims by topic (`claim`'s `topics` must then be null). */
  readonly filtersTopics: boolean
  /**
   * Queues one effect in the caller's transaction `tx`.
   * @returns true when queued now, false when `(topic, dedupeKey)` was queued before
   */
  add(tx: Tx, entry: OutboxInsert): Added
  /** Claims up to `limit` due rows for `leaseMs` under `claimId` (of these topics only, unless null). */
  claim(claimId: string, limit: number, leaseMs: number, topics: readonly string[] | null): Promise<ClaimedRow[]>
  /** Extends the lease of the rows `claimId` still holds to `leaseMs` from now. @returns those rows' ids */
  renew(claimId: string, ids: readonly string[], leaseMs: number): Promise<Set<string>>
  /** Marks rows delivered and ends their lease. */
  delivered(claimId: string, ids: readonly string[]): Promise<void>
  /** Ends the lease of failed rows, keeps each error, and makes each due again after its delay. */
  retry(claimId: string, rows: readonly { id: string; delayMs: number; error: string }[]): Promise<void>
  /** Moves rows into the dead letters (source `outbox`, name = topic) with their last error. */
  deadLetter(claimId: string, rows: readonly { id: string; error: string }[]): Promise<void>
  /** Rows not yet delivered, due now or later. */
  pending(): Promise<number>
}

/** A checked entry, as `add` writes it. */
export interface OutboxInsert {
  readonly topic: string
  readonly dedupeKey: string
  /** JSON text. */
  readonly payload: string
  readonly delayMs: number
}

/** One claimed row. */
export interface ClaimedRow {
  readonly id: string
  readonly topic: string
  readonly dedupeKey: string
  /** The payload, parsed. */
  readonly payload: unknown
  /** Attempts so far, this claim's included (1 on the first). */
  readonly attempts: number
  readonly lastError: string | null
  readonly createdAt: Date
}

/** What a store that serves the outbox has. */
export interface WithOutboxTable<Tx, Added extends boolean | Promise<boolean> = Promise<boolean>> {
  readonly name: string
  readonly outbox: OutboxTable<Tx, Added>
}
