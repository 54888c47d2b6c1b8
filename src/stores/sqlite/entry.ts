import { existsSync, rmSync, statSync } from 'node:fs'
import { resolve } from 'node:path'
import type BetterSqlite3 from 'better-sqlite3'
import { CliError } from '../../core/errors/cli-error.js'
import type { StoreAccess, StoreEntry, StoreTarget } from '../../ports/store-entry.js'
import { loadPeer, shellWord, tablesMissingError } from '../cli-kit.js'
import { SQLITE_SCHEMA_VERSION, sqliteMigrationScript } from './dialect/migrations.js'

/** SQLite as the `idem` command reaches it: `--sqlite <file>`. */
export const entry: StoreEntry = {
  name: 'sqlite',
  title: 'SQLite',
  exports: { subpath: './sqlite', module: './dist/stores/sqlite/index.js' },
  peer: 'better-sqlite3',
  cli: {
    value: '<file>',
    help: 'SQLite database file',
    commands: ['migrate', 'prune', 'inspect', 'stats', 'uninstall', 'reconcile'],
    target: sqliteTarget,
    tablesMissing: (error) => error instanceof Error && /no such table: idem_/.test(error.message),
    sql: { latest: SQLITE_SCHEMA_VERSION, schemas: false, atomic: true, script: (from) => sqliteMigrationScript(from) },
  },
}

function sqliteTarget(given: string): StoreTarget {
  if (given.trim() === '') throw new CliError('--sqlite needs a file name', 'pass --sqlite path/to/app.db')
  const file = resolve(given)
  const flags = `--sqlite ${shellWord(file)}`
  return {
    flags,
    secrets: [],
    missing: (cause) => tablesMissingError(file, flags, cause),
    withOperator: async (access, work) => {
      const sqliteOperator = (await import('./operator.js')).sqliteOperator
      return withSqlite(file, access, (db) => work(sqliteOperator({ db })))
    },
  }
}

type Database = BetterSqlite3.Database

// better-sqlite3 is loaded only when a command runs.
const loadSqlite = () => loadPeer('better-sqlite3', 'SQLite', async () => (await import('better-sqlite3')).default)

/**
 * Opens the SQLite file, runs `work`, and closes it. Only `create` (migrate) may make a
 * new file, and a new file that `work` failed on is removed again: a typo must leave
 * no empty database behind.
 */
async function withSqlite<T>(file: string, { create = false, readonly = false, dryRun = false }: StoreAccess, work: (db: Database) => Promise<T>): Promise<T> {
  const Sqlite = await loadSqlite()
  const existed = existsSync(file)
  if (existed && statSync(file).isDirectory()) throw new CliError(`--sqlite ${file} is a directory`, 'pass the path of a database file')
  if (!existed && dryRun) {
    // What a dry run would apply to a new file: everything. Nothing is created.
    const empty = new Sqlite(':memory:')
    try {
      return await work(empty)
    } finally {
      empty.close()
    }
  }
  if (!existed && !create) throw new CliError(`no SQLite database at ${file}`, `check the path; to create it with idem's tables, run: idem migrate --sqlite ${file}`)
  let db: Database
  try {
    db = new Sqlite(file, { fileMustExist: !create, readonly })
  } catch (error) {
    throw new CliError(`cannot open ${file}: ${(error as Error).message}`, 'check the path and its permissions', { cause: error })
  }
  let failed = false
  try {
    if (!existed) db.pragma('journal_mode = WAL')
    return await work(db)
  } catch (error) {
    failed = true
    throw error
  } finally {
    db.close()
    if (failed && !existed) for (const suffix of ['', '-wal', '-shm', '-journal']) rmSync(`${file}${suffix}`, { force: true })
  }
}
