import Database from 'better-sqlite3'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface TestSqlite {
  /** Opens (creating) a database file in the temp directory, in WAL mode. */
  open(name: string): Database.Database
  /** Closes every database opened here and removes the directory. */
  close(): void
}

/** Real SQLite files in a temp directory of their own, for one test file. */
export function testSqlite(prefix: string): TestSqlite {
  const dir = mkdtempSync(join(tmpdir(), `${prefix}-`))
  const opened: Database.Database[] = []
  return {
    open(name) {
      const db = new Database(join(dir, `${name}.db`))
      db.pragma('journal_mode = WAL')
      opened.push(db)
      return db
    },
    close() {
      for (const db of opened) if (db.open) db.close()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
