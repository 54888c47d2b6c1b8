import type { InboxDeadLetter } from '../../ports/inbox-table.js'
import type { OutboxInsert } from '../../ports/outbox-table.js'
import type { OperatorStatements } from './operator-dialect.js'
import type { NamedStatement, Result, Row, Statement, Step } from './statement.js'

/**
 * What a SQL store's dialect gives the protocol (src/stores/sql/): every statement it
 * runs, as pure functions of the store's schema and of their arguments, and the
 * migrations as versioned data. Nothing here opens a connection; the driver
 * (driver.ts) runs what the dialect writes. docs/stores.md ("Writing a SQL dialect")
 * walks through each part.
 */
export interface StoreDialect {
  readonly keys: KeyStatements
  readonly inbox: InboxStatements
  readonly outbox: OutboxStatements
  readonly once: OnceStatements
  readonly deadLetters: DeadLetterStatements
  readonly migrations: MigrationStatements
  readonly operator: OperatorStatements
}

// ---- keys: the transactional engine's records, on every request ----

/** A value of a key call, by name: what a key statement takes (see `KeyStatement`). */
export type KeyValue =
  | 'scope'
  | 'key'
  /** How long the claim may wait for the key's holder, in milliseconds. */
  | 'waitMs'
  | 'fingerprint'
  | 'outcome'
  /** The record's retention, in milliseconds. */
  | 'ttlMs'
  /** This process's clock, in epoch milliseconds, for a dialect that keeps time as numbers. */
  | 'now'
  /** `now + ttlMs`. */
  | 'expiresAt'

/**
 * A statement of the key protocol: its text, built once with the store, and the names of
 * the values it takes, in the order of its placeholders. The session binds them from
 * its call, so a request runs no code of the dialect's.
 */
export interface KeyStatement {
  readonly statement: NamedStatement
  readonly takes: readonly KeyValue[]
}

/**
 * The key table's statements (`idem_keys`, or Postgres's `idem_keys_by_day`). A row
 * holds `scope`, `key`, `fingerprint`, `outcome`, `created_at` and `expires_at`.
 */
export interface KeyStatements {
  /** Opens a transaction of the store's own: sent in one round trip with `claim`. */
  readonly opening: NamedStatement
  /**
   * Takes the key's lock (waiting up to `waitMs` where the database waits; see the
   * driver's `connect` for one that cannot), then reads the key: at most one row, its
   * column `claim` the claim as one value (`readClaim`), or no row for a new key. An
   * expired record counts as none: the claim removes it, or `save` replaces it.
   */
  readonly claim: KeyStatement
  /**
   * Reads a key's live record (`fingerprint`, `outcome`) outside any transaction, with
   * no lock: a committed record is final until it expires, so this alone can answer a
   * retry; finding none says nothing, and the call then claims the key.
   */
  readonly lookup: KeyStatement
  /** Writes the record under the claim's lock; sent in one round trip with `commit`. */
  readonly save: KeyStatement
  readonly commit: NamedStatement
  /**
   * Where the driver sends one statement per round trip (mysql2 without multiple
   * statements): `opening` and `claim` as one statement that opens the transaction
   * itself, and `save` and `commit` as one that commits, which a transaction of the
   * store's own then sends instead (`claim` and `save` stay for the caller's).
   */
  readonly owned?: { readonly claim: KeyStatement; readonly save: KeyStatement }
  /**
   * Which retries read the record first, outside any transaction: `every key` where a
   * read costs no round trip (an embedded database), `recorded keys` (those this store
   * object committed lately) where it does.
   */
  readonly readFirst: 'every key' | 'recorded keys'
}

// ---- the inbox: one row per processed message id ----

/** The inbox's statements (`idem_inbox`, `idem_inbox_attempts`, or the key table where ids are keys). */
export interface InboxStatements {
  /** Opens a delivery's transaction: sent in one round trip with `mark` or `claim`. */
  readonly opening: NamedStatement
  /**
   * Claims a new id with its row already written, without waiting (one row written:
   * claimed; none: the id is recorded or held, and `claim` runs in the same
   * transaction). Only where the isolation level lets a write see every commit.
   */
  mark?(consumer: string, key: string, retentionMs: number, now: number): Step
  /**
   * Takes the id's lock, waiting up to `waitMs`, and reads it: at most one row, its
   * `state` `new`, `found`, `locked` or `stale` (as `idem_inbox_claim` answers), or no
   * row for a new id.
   */
  claim(consumer: string, key: string, waitMs: number, now: number): Step
  /** Reads a recorded id outside any transaction (one row: processed), where that costs no round trip: every delivery then reads first. */
  lookup?(consumer: string, key: string, now: number): Step
  /** Records a claimed id, at commit (unless `mark` wrote it). */
  save(consumer: string, key: string, retentionMs: number, now: number): Step
  readonly commit: NamedStatement
  /** Reads and removes a message's failure count (`attempts`, `last_error`, `first_failed_at`), in its transaction. */
  takeFailures(consumer: string, key: string): Statement
  /** Counts one failed attempt, keeping its error, in a statement of its own: one row, `attempts`. */
  recordFailure(consumer: string, key: string, error: string, now: number): Statement
  /** Keeps a message as a dead letter, in its transaction. */
  deadLetter(consumer: string, key: string, letter: InboxDeadLetter, now: number): Statement
}

// ---- the outbox, once, dead letters ----

/**
 * The outbox's statements (`idem_outbox`). Each dispatcher operation is a list of
 * statements the driver runs in one short transaction of their own.
 */
export interface OutboxStatements {
  /** False when `claim` cannot filter by topic. */
  readonly filtersTopics: boolean
  /** Queues one effect in the caller's transaction: one row written when queued now, none when `(topic, dedupe_key)` was there. */
  insert(entry: OutboxInsert, now: number): Statement
  /** Claims due rows: every row returned (`OutboxRowColumns`) is leased to `claimId`. */
  claim(claimId: string, limit: number, leaseMs: number, topics: readonly string[] | null, now: number): Statement[]
  /** Extends the lease of the rows `claimId` still holds: every row returned (its `id`) was renewed. */
  renew(claimId: string, ids: readonly string[], leaseMs: number, now: number): Statement[]
  delivered(claimId: string, ids: readonly string[], now: number): Statement[]
  retry(claimId: string, rows: readonly { id: string; delayMs: number; error: string }[], now: number): Statement[]
  deadLetter(claimId: string, rows: readonly { id: string; error: string }[], now: number): Statement[]
  /** One row, `n`: rows not yet delivered. */
  pending(): Statement
  /** One batch of delivered rows older than `olderThanMs` deleted, at most `limit`. */
  prune(olderThanMs: number, limit: number, now: number): Statement
}

/** `once`'s statement: records `(kind, subject)` in the caller's transaction unless it is there (one row written: the first time). */
export interface OnceStatements {
  mark(kind: string, subject: string, now: number): Statement
}

/** Reads dead letters, newest first: rows of `id`, `source`, `name`, `message_key`, `payload` (JSON text), `attempts`, `last_error`, `first_seen_at`, `dead_at`. */
export interface DeadLetterStatements {
  list(source: 'inbox' | 'outbox', name: string | null, limit: number): Statement
}

// ---- pruning ----

/**
 * A table's expired rows, deleted in batches: each batch's statements run in a short
 * transaction of their own, and `read` says how many rows it deleted and whether
 * another batch follows, starting after `after` (a cursor the dialect reads from the
 * results, for a walk over a table without an index on expiry).
 */
export interface PruneWalk {
  batch(after: Row | undefined, now: number): Statement[]
  read(results: readonly Result[]): { deleted: number; more: boolean; after?: Row }
}

// ---- migrations: versioned data ----

/** One schema change, as data: its version and what it is (the statements are the dialect's). */
export interface MigrationInfo {
  readonly version: number
  readonly description: string
}

/**
 * How the dialect's migrations are applied, as data: `migrate()` runs `begin`, the
 * `preamble`, reads `current`, applies what is `pending`, and commits; the script an
 * operator applies by hand is the same statements.
 */
export interface MigrationStatements {
  /** The schema version this build expects. */
  readonly latest: number
  /** Opens the migration's transaction (an exclusive one where the database has them). */
  readonly begin: string
  /** Ends it: `COMMIT` (or, where DDL commits by itself, whatever lets the preamble's lock go). */
  readonly end: string
  /** What every migration starts with, in its transaction: a lock that makes concurrent runs take turns, the schema, the version table. */
  readonly preamble: readonly string[]
  /** One row, `version`: the newest applied (0 for none). */
  readonly current: string
  /** Each version after `from`, oldest first, with the statements that apply and then record it. */
  pending(from: number): { migration: MigrationInfo; statements: string[] }[]
  /** The version table, and a row recording each version up to `version` unless it is there: a baseline for tables created by hand. */
  baseline(version: number): string[]
}
