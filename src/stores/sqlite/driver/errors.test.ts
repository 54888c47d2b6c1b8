import { describe, expect, it } from 'vitest'
import { InvalidOptionError } from '../../../core/errors/invalid-option.js'
import { MigrationRequiredError } from '../../../core/errors/migration-required.js'
import { StoreUnavailableError } from '../../../core/errors/store-unavailable.js'
import { leasedSqliteStore } from '../leased.js'
import { classifySqliteError } from './errors.js'
import { sqliteStore } from '../store.js'

/** An error as a driver throws it: its message and the fields it sets. */
const thrown = (message: string, fields: Record<string, unknown> = {}): Error => Object.assign(new Error(message), fields)

// The shapes each driver was seen to throw (better-sqlite3 12 on Node, bun:sqlite in Bun
// 1.4, node:sqlite in Deno 2.9 and Bun); test/runtimes runs them for real.
describe('classifySqliteError: the three drivers’ errors', () => {
  it.each([
    ['better-sqlite3: SQLITE_BUSY', thrown('database is locked', { code: 'SQLITE_BUSY' })],
    ['better-sqlite3: an extended code', thrown('disk I/O error', { code: 'SQLITE_IOERR_WRITE' })],
    ['bun:sqlite: SQLITE_BUSY with errno', thrown('database is locked', { code: 'SQLITE_BUSY', errno: 5 })],
    ['node:sqlite: errcode 5', thrown('database is locked', { code: 'ERR_SQLITE_ERROR', errcode: 5, errstr: 'database is locked' })],
    ['node:sqlite: an extended errcode (SQLITE_BUSY_SNAPSHOT, 517)', thrown('database is locked', { code: 'ERR_SQLITE_ERROR', errcode: 517 })],
    ['Deno’s node:sqlite exec: only the message', thrown('database is locked', { code: 'ERR_SQLITE_ERROR' })],
    ['better-sqlite3: closed', new TypeError('The database connection is not open')],
    ['node:sqlite: closed', thrown('database is not open', { code: 'ERR_INVALID_STATE' })],
    ['node:sqlite: a statement finalized with its closed database', thrown('statement has been finalized', { code: 'ERR_INVALID_STATE' })],
    ['bun:sqlite: closed (prepare)', new RangeError('Cannot use a closed database')],
    ['bun:sqlite: closed (exec, inTransaction)', thrown('Database has closed')],
  ])('%s is StoreUnavailableError', (_, error) => {
    const classified = classifySqliteError(error)
    expect(classified).toBeInstanceOf(StoreUnavailableError)
    expect((classified as Error).cause).toBe(error)
  })

  it.each([
    ['a constraint (better-sqlite3, bun:sqlite)', thrown('UNIQUE constraint failed: t.a', { code: 'SQLITE_CONSTRAINT_PRIMARYKEY' })],
    ['a constraint (node:sqlite, errcode 1555)', thrown('UNIQUE constraint failed: t.a', { code: 'ERR_SQLITE_ERROR', errcode: 1555 })],
    ['a syntax error (node:sqlite, errcode 1)', thrown('near "SELEC": syntax error', { code: 'ERR_SQLITE_ERROR', errcode: 1 })],
    ['an error that merely mentions a lock', thrown('the database is locked by policy')],
  ])('%s passes unchanged', (_, error) => {
    expect(classifySqliteError(error)).toBe(error)
  })

  it('a missing idem table is MigrationRequiredError, on every driver', () => {
    for (const error of [thrown('no such table: idem_keys', { code: 'SQLITE_ERROR' }), thrown('no such table: idem_keys', { code: 'ERR_SQLITE_ERROR', errcode: 1 })]) {
      expect(classifySqliteError(error)).toBeInstanceOf(MigrationRequiredError)
    }
  })
})

describe('the SQLite stores refuse what is not a database, naming the option', () => {
  const noTransactionFlag = { prepare() {}, exec() {} }
  it.each([
    ['an empty object', {}],
    ['null', null],
    ['a database that cannot tell whether a transaction is open (node:sqlite before Node 22.16)', noTransactionFlag],
  ])('%s', (_, db) => {
    for (const make of [() => sqliteStore({ db: db as never }), () => leasedSqliteStore({ db: db as never })]) {
      expect(make).toThrow(InvalidOptionError)
      expect(make).toThrow(/option "db" must be an open SQLite database/)
    }
  })
})
