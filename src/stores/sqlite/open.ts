import { InvalidOptionError } from '../../core/errors/invalid-option.js'
import type { SqliteDatabase } from '../../ports/sql-clients.js'

/** An SQLite database `openSqlite` opened: the driver's own object, typed by the part idem uses. */
export interface OpenedSqlite extends SqliteDatabase {
  /** Closes the database (when the app stops); stores on it then answer `StoreUnavailableError`. */
  close(): void
}

type Driver = new (file: string) => OpenedSqlite

// Loaded by name when called: Node never loads bun:sqlite, Bun and Deno never load the
// native addon, and neither TypeScript nor a bundler has to know the runtimes' modules.
const load = (specifier: string): Promise<Record<string, unknown>> => import(specifier)

/**
 * Opens (or creates) an SQLite database file with the runtime's own SQLite, in WAL mode,
 * for `sqliteStore` and `leasedSqliteStore`: `bun:sqlite` on Bun, `node:sqlite` on Deno,
 * better-sqlite3 on Node (or, where better-sqlite3 is not installed, `node:sqlite` from
 * Node 22.16). The embedded default thus needs no native addon on Bun and Deno. To pick
 * the driver or its options yourself, open the database with it and pass that instead.
 *
 * @param file the database file's path, or `':memory:'`
 * @throws Error when no SQLite driver is available (Node without better-sqlite3, before 22.16)
 * @example
 * const db = await openSqlite('app.db')
 * const store = sqliteStore({ db }); store.migrate()
 * @see docs/stores.md
 */
export async function openSqlite(file: string): Promise<OpenedSqlite> {
  if (typeof file !== 'string' || file === '') throw new InvalidOptionError('openSqlite: "file" must be the path of a database file (or ":memory:")')
  const db = new (await runtimeDriver())(file)
  db.exec('PRAGMA journal_mode = WAL')
  return db
}

async function runtimeDriver(): Promise<Driver> {
  const { Bun, Deno } = globalThis as { Bun?: unknown; Deno?: unknown }
  if (Bun !== undefined) return (await load('bun:sqlite')).Database as Driver
  if (Deno !== undefined) return (await load('node:sqlite')).DatabaseSync as Driver
  try {
    return (await load('better-sqlite3')).default as Driver
  } catch (missing) {
    // node:sqlite tells whether a transaction is open (`isTransaction`) from Node 22.16.
    const DatabaseSync = (await load('node:sqlite').catch(() => undefined))?.DatabaseSync as Driver | undefined
    if (DatabaseSync !== undefined && 'isTransaction' in DatabaseSync.prototype) return DatabaseSync
    throw new Error(`openSqlite: no SQLite driver on Node ${process.versions.node}: install better-sqlite3 (npm install better-sqlite3), or run Node 22.16 or later (node:sqlite)`, {
      cause: missing,
    })
  }
}
