import Database from 'better-sqlite3'
import type { SqliteHandle } from '../http/support/backend-kinds.js'

/** An SQLite driver the store takes, as a way to open a database file. */
export interface SqliteDriver {
  name: 'better-sqlite3' | 'node:sqlite'
  open(file: string): SqliteHandle
}

/**
 * The SQLite drivers this Node has: better-sqlite3 always; node:sqlite from Node 22.16
 * (which tells whether a transaction is open). Node 20 has no node:sqlite: the contract
 * suites run on it under Deno (test/runtimes), and on bun:sqlite under Bun.
 */
export async function sqliteDrivers(): Promise<{ available: SqliteDriver[]; missing: string[] }> {
  const available: SqliteDriver[] = [{ name: 'better-sqlite3', open: (file) => new Database(file) }]
  const missing: string[] = []
  // A variable specifier: Node 20's types know no node:sqlite.
  const specifier: string = 'node:sqlite'
  const nodeSqlite = (await import(specifier).catch(() => undefined)) as { DatabaseSync?: new (file: string) => SqliteHandle } | undefined
  const DatabaseSync = nodeSqlite?.DatabaseSync
  if (DatabaseSync !== undefined && 'isTransaction' in DatabaseSync.prototype) available.push({ name: 'node:sqlite', open: (file) => new DatabaseSync(file) })
  else missing.push(`node:sqlite (Node ${process.versions.node} has ${DatabaseSync === undefined ? 'none' : 'one without isTransaction'}; Deno runs it in test/runtimes)`)
  return { available, missing }
}
