import type { SqlConnection } from './sql-dialect.js'

/**
 * What an operator (the `idem` command, a job or dashboard of your own) asks of a store's
 * backend beyond the engines' ports: one key's records, counts, expired records and
 * their pruning, and the schema's migrations. Each store implements it in its own
 * folder (`postgresOperator`, `sqliteOperator`, `redisOperator`, `dynamodbOperator`),
 * the only code that knows the backend's tables, scripts or items; callers branch on
 * what an operator offers, never on which backend it is.
 */
export interface StoreOperator {
  /** The backend, for messages: `Postgres`, `SQLite`, `Redis`, `DynamoDB`. */
  readonly backend: string
  /** One key's records, read without taking a lock. */
  inspect(scope: string, key: string): Promise<KeyInspection>
  /**
   * Counts and sizes of idem's records. It reads whole tables: run it off-peak on large
   * ones. Absent where the backend cannot count without walking every key (Redis).
   */
  stats?(windowMs: number): Promise<TableStats>
  /** Expired records a prune would delete now. Absent with `prune`. */
  expiredCount?(): Promise<number>
  /**
   * Deletes expired records in bounded batches, never a live one.
   * @returns how many records it deleted
   * Absent where the backend expires idem's records itself, each carrying its
   * retention as a TTL (Redis).
   */
  prune?(options?: PruneOptions): Promise<number>
  /** The schema's versioned migrations. Absent where the backend has no schema to migrate (Redis). */
  readonly migrations?: SchemaMigrations
  /**
   * The backend's SQL dialect with the operator's connection: what `idem reconcile`
   * reads the caller's own tables through. Absent where the backend is not SQL (Redis, DynamoDB).
   */
  readonly sql?: SqlConnection
  /**
   * Removes everything of idem's from the backend: what `idem uninstall` runs. Absent
   * where idem made nothing that outlives its keys (Redis: each key carries its retention).
   */
  readonly uninstall?: StoreUninstall
}

/** The way out: what idem made in a backend, and its removal. */
export interface StoreUninstall {
  /** What `run()` would remove now, one line each (a SQL statement, or the DynamoDB request): nothing is changed. */
  plan(): Promise<string[]>
  /** Removes it (on SQL, in one transaction) and returns what it ran, as `plan()` lists it; nothing when idem left nothing. */
  run(): Promise<string[]>
}

/** What `StoreOperator.prune` takes. */
export interface PruneOptions {
  /** Records deleted per statement or request. @default 1000 */
  batchSize?: number
  /**
   * Also delete outbox rows delivered longer ago than this, where the store keeps an
   * outbox. Delivered rows are kept otherwise, so adding the same effect again stays a
   * no-op. @default kept
   */
  deliveredOutboxOlderThanMs?: number
  /** Called after each batch with how many records it deleted: progress for a long prune. */
  onBatch?: (deleted: number) => void
}

/** A store's schema versions: what `idem migrate` and `idem sql` work with. */
export interface SchemaMigrations {
  /** The version this idem migrates to. */
  readonly latest: number
  /** The version applied: 0 when idem was never migrated there. */
  current(): Promise<number>
  /**
   * Every statement that brings the schema from version `from` to `latest`, in one
   * transaction, recording each version as `migrate()` does, so a `migrate()` after the
   * script was applied by hand finds the schema current.
   */
  script(from: number): string[]
  /** idem's tables that exist although no version is recorded: SQL applied by hand without its version rows. */
  unrecordedTables(): Promise<string[]>
  /** Records versions 1 to `version` as applied without running them (tables created by hand). */
  baseline(version: number): Promise<void>
  /** Applies the missing versions under a lock: safe from many instances at once. */
  migrate(): Promise<{ from: number; to: number; applied: number[] }>
  /**
   * False where the database commits DDL as it runs it (MySQL): a migration is then no
   * transaction, and each of its statements is safe to run again. @default true
   */
  readonly transactional?: boolean
}

/** One key's records, the same shape from every store, read without taking any lock. */
export interface KeyInspection {
  scope: string
  key: string
  /** Now, by the store's clock (ISO 8601). */
  now: string
  /** The transactional record (`idem_keys`), if any. */
  record?: {
    fingerprint: string
    createdAt: string
    expiresAt: string
    expired: boolean
    /** The stored HTTP status, for outcomes the HTTP middleware stored. */
    status: number | null
    outcomeBytes: number
  }
  /** The leased claim, if any. */
  lease?: {
    state: 'held' | 'free' | 'completed'
    fingerprint: string
    /** The fencing token of the current (or last) holder; '' where the store makes one only when a call asks and none did (Redis). */
    token: string
    leaseUntil: string | null
    /** True while a holder's lease runs. */
    leaseLive: boolean
    /** Null where the store cannot tell (a Redis key without a TTL). */
    expiresAt: string | null
    expired: boolean
    status: number | null
    /** `savedAt` and `token` are null where the store keeps no time or token per step (Redis, DynamoDB's time). */
    steps: { name: string; savedAt: string | null; token: string | null }[]
  }
}

/** Counts and sizes of idem's records, for `idem stats`. */
export interface TableStats {
  /** The window the `recent` counts cover, in milliseconds back from now. */
  windowMs: number
  /** Transactional keys; absent where the store keeps none (DynamoDB: leased keys only). */
  keys?: {
    total: number
    live: number
    /** Expired, waiting for a prune. */
    expired: number
    /** Created within the window. */
    recent: number
    /** Keys created within the window, by stored HTTP status (`other` for non-HTTP outcomes). */
    byStatus: Record<string, number>
    /** Keys created within the window, per calendar day (UTC). */
    byDay: { day: string; rows: number }[]
    /** `recent` per day of the window. */
    rowsPerDay: number
    /** The key table's size on disk, indexes included; null where the store cannot tell. */
    bytes: number | null
  }
  leases: { byState: Record<string, number>; expired: number; bytes: number | null }
  inbox: { live: number; expired: number }
  /** The outbox; absent where the store keeps none. */
  outbox?: { pending: number; delivered: number; oldestPendingAgeMs: number | null }
  deadLetters: { total: number; recent: number }
}
