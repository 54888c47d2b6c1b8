import type { KeyStatements } from '../../sql/dialect.js'
import { claimFunctionName, keyLockId, KEYS, KEYS_BY_DAY, type KeyTableShape } from './key-claim.js'
import { begin, COMMIT, named, quoteSchema, type Isolation, type Statement } from './statement.js'

// ---- idem_keys (migration 1) and idem_keys_by_day (migration 6): the transactional engine's key records ----

/** The key table of a store's `keyLayout`: `idem_keys` (`'table'`) or `idem_keys_by_day` (`'daily-partitions'`). */
export type KeyLayout = 'table' | 'daily-partitions'

function shapeOf(layout: KeyLayout): KeyTableShape {
  return layout === 'table' ? KEYS : KEYS_BY_DAY
}

/**
 * The key table's statements for the protocol (src/stores/sql/key-sessions.ts). A row
 * holds `scope`, `key`, `fingerprint`, `outcome`, `created_at` (for operators: `idem
 * stats`, `idem inspect`) and `expires_at`; a key being claimed has no row, only its
 * advisory lock, which the claim function takes (key-claim.ts). Each text is built
 * once, with the store, and prepared once per connection under its name.
 * - `claim`: the key's lock (waiting up to `waitMs`) and its live record, one value;
 * - `lookup`: the live record, outside any transaction, for a key this store recorded;
 * - `save`: a plain INSERT: the caller holds the key's lock, and the claim removed an
 *   expired record under it; a row written by anything else meanwhile is a unique
 *   violation (`idem_keys`) that rolls the whole transaction back.
 */
export function keyStatements(schema: string, layout: KeyLayout, isolation: Isolation): KeyStatements {
  const shape = shapeOf(layout)
  const s = quoteSchema(schema)
  const table = `${s}.${shape.table}`
  return {
    opening: begin(isolation),
    claim: { statement: named('claim', `SELECT ${s}.${claimFunctionName(shape)}($1, $2, $3) AS claim`), takes: ['scope', 'key', 'waitMs'] },
    lookup: { statement: named('lookup', lookupText(table)), takes: ['scope', 'key'] },
    save: {
      statement: named(
        'save',
        `INSERT INTO ${table} (scope, key, fingerprint, outcome, created_at, expires_at) ` +
          `VALUES ($1, $2, $3, $4, now(), now() + $5 * interval '1 millisecond')`,
      ),
      takes: ['scope', 'key', 'fingerprint', 'outcome', 'ttlMs'],
    },
    commit: COMMIT,
    readFirst: 'recorded keys',
  }
}

function lookupText(table: string): string {
  return `SELECT fingerprint, outcome FROM ${table} WHERE scope = $1 AND key = $2 AND expires_at > now()`
}

/** What a peek (peek.ts) reads of a key, without claiming it. */
export interface KeyPeekStatements {
  /** Tries the key's advisory lock without waiting: `free` when nobody held it. */
  tryLock(scope: string, key: string): Statement
  /** The key's live record, if any. */
  lookup(scope: string, key: string): Statement
}

/** The peek's statements on the key table of `layout`. */
export function keyPeekStatements(schema: string, layout: KeyLayout): KeyPeekStatements {
  const shape = shapeOf(layout)
  const lookup = lookupText(`${quoteSchema(schema)}.${shape.table}`)
  const tryLock = `SELECT pg_try_advisory_xact_lock(${keyLockId('$1', '$2', shape.seed)}) AS free`
  return {
    tryLock: (scope, key) => ({ text: tryLock, values: [scope, key] }),
    lookup: (scope, key) => ({ text: lookup, values: [scope, key] }),
  }
}
