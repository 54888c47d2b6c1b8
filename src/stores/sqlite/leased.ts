import { assertCount, assertDuration, assertKnownOptions, optionNames } from '../../core/errors/option-checks.js'
import type { Lease, LeaseClaim, LeasedStore } from '../../ports/leased-store.js'
import { MAX_OUTCOME_BYTES } from '../max-outcome.js'
import { assertSqliteDatabase, changes, firstRow, setBusyTimeout } from './driver/connection.js'
import { classifySqliteError } from './driver/errors.js'
import * as sql from './dialect/leases.js'
import { sqliteStore } from './store.js'
import type { SqliteDatabase, SqliteStatement } from '../../ports/sql-clients.js'
import { prepared } from './driver/statements.js'
import { inTurn } from './driver/writer.js'

/** What `leasedSqliteStore` takes: the database and how long to wait for its write lock. */
export interface LeasedSqliteStoreOptions {
  /**
   * An open SQLite database (better-sqlite3, bun:sqlite or node:sqlite; WAL mode recommended). Every store call is a
   * short transaction of its own; if another transaction is open on this connection
   * the call waits for it to end, so a step is never folded into someone else's
   * transaction (and rolled back with it).
   */
  db: SqliteDatabase
  /** How long a call waits for SQLite's writer (or another transaction on the connection) before `StoreUnavailableError`. @default 5000 */
  busyTimeoutMs?: number
}

/** The leased-engine store on SQLite, with `prune` for expired claims and outcomes. */
export interface LeasedSqliteStore extends LeasedStore {
  /** Creates or upgrades idem's tables (the same migrations as `sqliteStore`). */
  migrate(): { from: number; to: number; applied: number[] }
  /**
   * Deletes expired leased keys and their steps, `batchSize` keys per transaction.
   * @returns how many keys were deleted
   */
  prune(options?: { batchSize?: number; onBatch?: (deleted: number) => void }): Promise<number>
}

interface LeaseRow {
  fingerprint: string
  state: 'held' | 'free' | 'completed'
  token: number
  lease_until: number | null
  outcome: string | null
  expires_at: number
}

type LeasedPruneOptions = NonNullable<Parameters<LeasedSqliteStore['prune']>[0]>

const OPTIONS = optionNames<LeasedSqliteStoreOptions>({ db: true, busyTimeoutMs: true })
const PRUNE_OPTIONS = optionNames<LeasedPruneOptions>({ batchSize: true, onBatch: true })

/** A statement of dialect/leases.ts, prepared on the connection once. */
type Prepared = (text: string) => SqliteStatement

/**
 * Runs `work` synchronously, with the prepared statements and the time, in a
 * transaction of its own when `transaction` is set, once it is this connection's turn:
 * every idem store on the connection (and the outbox dispatcher) queues in one line
 * (see `inTurn`), so a call never runs inside another one's open transaction, nor waits
 * behind a busy engine for ever.
 */
type Run = <T>(work: (s: Prepared, now: number) => T, transaction: boolean) => Promise<T>

/**
 * The leased store on SQLite (better-sqlite3, bun:sqlite or node:sqlite). Each call runs synchronously inside one
 * `BEGIN IMMEDIATE` transaction (or one statement), so it is atomic against this
 * process and against other processes using the same file. Times are this machine's
 * clock in milliseconds.
 *
 * @example
 * const db = await openSqlite('app.db') // WAL mode
 * const store = leasedSqliteStore({ db }); store.migrate()
 * const idem = createLeasedIdem({ store })
 */
export function leasedSqliteStore(options: LeasedSqliteStoreOptions): LeasedSqliteStore {
  assertKnownOptions('leasedSqliteStore', options, OPTIONS)
  const { db, busyTimeoutMs = 5_000 } = options
  assertSqliteDatabase(db, 'leasedSqliteStore')
  assertDuration('leasedSqliteStore: option "busyTimeoutMs"', busyTimeoutMs, 0)
  // Cross-process writers are waited for by SQLite itself.
  setBusyTimeout(db, busyTimeoutMs)
  const statement: Prepared = (text) => prepared(db, text).statement
  const run: Run = async (work, transaction) => {
    try {
      return await inTurn(db, busyTimeoutMs, 'leasedSqliteStore (busyTimeoutMs)', () => work(statement, Date.now()), transaction)
    } catch (error) {
      throw classifySqliteError(error)
    }
  }
  return {
    name: 'sqlite',
    maxOutcomeBytes: MAX_OUTCOME_BYTES,
    // The migration forgets the connection's statements, prepared on the tables before.
    migrate: () => sqliteStore({ db, busyTimeoutMs }).migrate(),
    prune: (options) => prune(run, options),
    claim: (scope, key, fingerprint, leaseMs, ttlMs) => claim(run, scope, key, fingerprint, leaseMs, ttlMs),
  }
}

function claim(run: Run, scope: string, key: string, fingerprint: string, leaseMs: number, ttlMs: number): Promise<LeaseClaim> {
  return run((s, now) => {
    const row = firstRow<LeaseRow>(s(sql.leaseRead), { scope, key })
    const live = row !== undefined && row.expires_at > now ? row : undefined
    if (live?.state === 'completed') return { state: 'completed', record: { fingerprint: live.fingerprint, outcome: live.outcome! } }
    if (live?.state === 'held' && live.lease_until! > now) return { state: 'running', fingerprint: live.fingerprint }
    // An expired key is a new key: its steps belong to an earlier lifetime.
    if (row !== undefined && live === undefined) s(sql.leaseDropSteps).run({ scope, key })
    const resumable = live !== undefined && firstRow(s(sql.leaseHasSteps), { scope, key }) !== undefined
    if (resumable && live.fingerprint !== fingerprint) return { state: 'running', fingerprint: live.fingerprint }
    const token = Math.max((row?.token ?? 0) + 1, now * 1000)
    s(sql.leaseClaim).run({ scope, key, fingerprint, token, leaseUntil: now + leaseMs, expiresAt: now + leaseMs + ttlMs })
    const steps = resumable ? (s(sql.leaseSteps).all({ scope, key }) as Array<{ name: string; result: string }>) : []
    return { state: 'acquired', lease: new SqliteLease(run, scope, key, token), steps: new Map(steps.map(({ name, result }) => [name, result])) }
  }, true)
}

async function prune(run: Run, options: LeasedPruneOptions = {}): Promise<number> {
  assertKnownOptions('prune', options, PRUNE_OPTIONS)
  const { batchSize = 1_000, onBatch } = options
  assertCount('prune: option "batchSize"', batchSize, 1)
  let deleted = 0
  for (;;) {
    const removed = await run((s, now) => {
      const expired = s(sql.leasePruneBatch).all({ now, limit: batchSize }) as Array<{ scope: string; key: string }>
      for (const { scope, key } of expired) {
        s(sql.leaseDropSteps).run({ scope, key })
        s(sql.leasePruneKey).run({ scope, key, now })
      }
      return expired.length
    }, true)
    deleted += removed
    onBatch?.(removed)
    if (removed < batchSize) return deleted
  }
}

/** One claim of a key in `idem_leases`: each write is compare-and-set on (state 'held', this claim's token). */
class SqliteLease implements Lease {
  readonly #run: Run
  // The parameters every statement of this claim is compare-and-set on, made once per claim.
  readonly #held: { readonly scope: string; readonly key: string; readonly token: number }

  constructor(run: Run, scope: string, key: string, token: number) {
    this.#run = run
    this.#held = { scope, key, token }
  }

  renew(leaseMs: number): Promise<boolean> {
    const held = this.#held
    return this.#run((s, now) => changes(s(sql.leaseRenew), { ...held, now, leaseUntil: now + leaseMs }) === 1, false)
  }

  saveStep(name: string, result: string): Promise<boolean> {
    const held = this.#held
    return this.#run((s, now) => changes(s(sql.leaseSaveStep), { ...held, name, result, now }) === 1, false)
  }

  complete(outcome: string, ttlMs: number): Promise<boolean> {
    const held = this.#held
    return this.#run((s, now) => {
      if (changes(s(sql.leaseComplete), { ...held, now, outcome, expiresAt: now + ttlMs }) !== 1) return false
      s(sql.leaseDropSteps).run({ scope: held.scope, key: held.key })
      return true
    }, true)
  }

  release(): Promise<boolean> {
    const held = this.#held
    return this.#run((s, now) => changes(s(sql.leaseRelease), { ...held, now }) === 1, false)
  }

  fencingToken(): Promise<number | undefined> {
    const held = this.#held
    return this.#run((s, now) => (firstRow(s(sql.leaseHolds), { ...held, now }) === undefined ? undefined : held.token), false)
  }
}
