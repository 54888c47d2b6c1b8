/**
 * `idem/data`: replay-safe data writes without a key table. Derive ids from the input
 * (`contentId`) and upsert by them, pin down non-deterministic steps (`memo`), gate
 * one-off side effects (`once`), and check afterwards that nothing slipped (`reconcile`).
 * @see docs/data.md
 */
export { contentId, type ContentIdFunction, type ContentIdPart } from './content-id.js'
export { upsert, upsertSql, type UpsertSpec, type UpsertSql } from './upsert.js'
export {
  createMemo,
  DEFAULT_MEMO_TTL_MS,
  DEFAULT_MEMO_WAIT_MS,
  type Memo,
  type MemoOptions,
  type MemoStoreOptions,
} from './memo.js'
export { createOnce, type Once, type OnceSubject } from './once.js'
export type { OnceTable, WithOnceTable } from '../ports/once-table.js'
export {
  reconcile,
  DEFAULT_RECONCILE_LIMIT,
  DEFAULT_RECONCILE_THRESHOLD,
  type DuplicateGroup,
  type ReconcileOptions,
  type ReconcileReport,
} from './reconcile.js'
export type { PgQueryable, SqliteDatabase } from '../ports/sql-clients.js'
export type { SqlDialect } from '../ports/sql-dialect.js'
