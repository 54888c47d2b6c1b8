import { keyId } from '../../../ports/key-store.js'
import { InvalidOptionError } from '../../../core/errors/invalid-option.js'
import type { SqliteDatabase } from '../../../ports/sql-clients.js'
import { KeyGate } from '../../key-gate.js'
import type { Connection, JoinUse, Joined, KeyLock, Locked, Plan, StoreDriver } from '../../sql/driver.js'
import type { Result, Row, Statement, Step } from '../../sql/statement.js'
import { inTransaction, isSqliteDatabase } from './connection.js'
import { classifySqliteError, guard } from './errors.js'
import { execute, forgetStatements } from './statements.js'
import { inTurn, takeTurn } from './writer.js'

/** How long a store's transactions wait for the connection's turn, and who waits, as a timeout names it. */
export interface Turn {
  readonly ms: number
  readonly who: string
}

/** The SQLite driver as the SQL stores' protocol runs it, with `migrate` synchronous (the store's `migrate()` returns its result). */
export type SqliteDriver = Omit<StoreDriver<SqliteDatabase, boolean>, 'migrate'> & { migrate<T>(plan: Plan<T>): T }

/**
 * Connections on which a joined call wrote its record inside a transaction that may
 * still be open (the caller's): a read outside a transaction on such a connection would
 * see it uncommitted. Shared by every store in the process, like the connection's turn.
 */
const joinedRecordsOpen = new WeakSet<SqliteDatabase>()

/**
 * SQLite through a synchronous driver (better-sqlite3, bun:sqlite, node:sqlite), as the
 * SQL stores' protocol runs it (src/stores/sql/driver.ts). One connection serves every
 * transaction, one at a time: a store's transaction takes the connection's turn
 * (writer.ts, a queue every idem store on the connection shares) for as long as it is
 * open, and, since SQLite holds no lock per key, the key in process first (`KeyGate`:
 * a claim of a key another call holds waits up to its `waitMs`). A retry is read outside
 * any turn, unless a joined call's record is uncommitted on the connection.
 */
export function sqliteDriver(db: SqliteDatabase, turn: Turn): SqliteDriver {
  const gate = new KeyGate()
  return {
    connect: (lock) => connect(db, turn, gate, lock),
    async lookup(step) {
      if (!inTransaction(db)) joinedRecordsOpen.delete(db)
      if (joinedRecordsOpen.has(db)) return undefined
      return { tx: db, rows: execute(db, step.statement.text, step.values).rows }
    },
    join: (tx, use) => new JoinedSqlite(tx, use, db),
    async transaction(statements) {
      try {
        return await inTurn(db, turn.ms, turn.who, () => statements.map(({ text, values }) => execute(db, text, values)), statements.length > 1)
      } catch (error) {
        throw classifySqliteError(error)
      }
    },
    query: async ({ text, values }) => execute(db, text, values),
    migrate: (plan) => migrate(db, plan),
  }
}

async function connect(db: SqliteDatabase, turn: Turn, gate: KeyGate, { scope, key, waitMs }: KeyLock): Promise<Connection<SqliteDatabase> | Locked<SqliteDatabase>> {
  const leaveKey = await gate.enter(keyId(scope, key), waitMs)
  if (leaveKey === undefined) return { locked: true, tx: db }
  let releaseTurn: () => void
  try {
    // Also waits out a transaction opened outside idem's queue (the caller's own BEGIN).
    releaseTurn = await takeTurn(db, turn.ms, turn.who)
  } catch (error) {
    leaveKey()
    throw error
  }
  joinedRecordsOpen.delete(db)
  return new HeldTurn(db, () => {
    releaseTurn()
    leaveKey()
  })
}

/** The connection's turn, held for one transaction, and the key with it. */
class HeldTurn implements Connection<SqliteDatabase> {
  constructor(
    readonly tx: SqliteDatabase,
    readonly release: () => void,
  ) {}

  async send(steps: readonly Step[]): Promise<Result[]> {
    return steps.map(({ statement, values }) => execute(this.tx, statement.text, values))
  }

  async run({ text, values }: Statement): Promise<Result> {
    return execute(this.tx, text, values)
  }

  async end(): Promise<void> {
    rollbackQuietly(this.tx)
    this.release()
  }
}

const REFUSALS: Record<JoinUse, { other?: string; outside: string }> = {
  run: {
    other: 'run: option "tx" must be the same Database the SQLite store was created with',
    outside: 'run: option "tx" was given but the Database has no open transaction (BEGIN IMMEDIATE first)',
  },
  once: { outside: 'once: "tx" is a Database with no open transaction; call once inside db.transaction(...) so the mark commits with the side effect' },
  'outbox.add': { outside: 'outbox.add: "tx" is a Database with no open transaction; add inside the transaction whose writes the effect follows' },
}

/**
 * The caller's open transaction on a database: the store's own for a call (whose
 * record, uncommitted until the caller ends it, keeps replays from reading first), any
 * for `once` and `outbox.add`, which are synchronous so they fit inside one.
 */
class JoinedSqlite<T> implements Joined<T, boolean> {
  readonly #db: SqliteDatabase

  constructor(
    readonly tx: T,
    use: JoinUse,
    db: SqliteDatabase,
  ) {
    const refusal = REFUSALS[use]
    if (refusal.other !== undefined && (tx as unknown) !== db) throw new InvalidOptionError(refusal.other)
    if (!isSqliteDatabase(tx) || !inTransaction(tx)) throw new InvalidOptionError(refusal.outside)
    this.#db = tx
  }

  async send(steps: readonly Step[]): Promise<Result[]> {
    return steps.map(({ statement, values }) => execute(this.#db, statement.text, values))
  }

  wroteOne({ text, values }: Statement): boolean {
    return execute(this.#db, text, values).rowCount === 1
  }

  recorded(): void {
    joinedRecordsOpen.add(this.#db)
  }
}

/** Rolls back the open transaction, if there is one; never throws. */
export function rollbackQuietly(db: SqliteDatabase): void {
  try {
    if (inTransaction(db)) db.exec('ROLLBACK')
  } catch {
    // The connection is closed or the transaction already ended: nothing to undo.
  }
}

/**
 * Runs a migration plan on the connection, at once (a migration is what runs before
 * the app serves: it takes no turn), rolling back when a statement fails; the
 * connection's prepared statements are then forgotten, bound as they were to the tables
 * before.
 */
function migrate<T>(db: SqliteDatabase, plan: Plan<T>): T {
  return guard(() => {
    try {
      let step = plan.next([])
      while (step.done !== true) step = plan.next(runText(db, step.value))
      forgetStatements(db)
      return step.value
    } catch (error) {
      rollbackQuietly(db)
      throw error
    }
  })
}

// Statements of a migration: DDL and the version rows, run as they are; the version read answers rows.
function runText(db: SqliteDatabase, text: string): readonly Row[] {
  if (/^\s*SELECT\b/i.test(text)) return db.prepare(text).all() as Row[]
  db.exec(text)
  return []
}
