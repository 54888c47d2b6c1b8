// What is particular to the runtime's own SQLite driver: `openSqlite` picks it, and a
// closed connection is StoreUnavailableError on every call, at once (its driver throws
// where better-sqlite3 answers: `inTransaction` itself fails once it is closed).
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'vitest'
import { StoreUnavailableError } from 'idem'
import { leasedSqliteStore, openSqlite, sqliteStore } from 'idem/sqlite'
import type { SliceGroup } from './main.js'
import { SLICE_GROUPS } from './plan.js'
import { ownSqliteModule } from './runtime.js'

export const sqliteGroup: SliceGroup = {
  name: SLICE_GROUPS.find((name) => name.startsWith('sqlite: '))!,
  async open() {
    const dir = mkdtempSync(join(tmpdir(), 'idem-runtime-sqlite-'))
    return {
      cases: [
        {
          name: `openSqlite opens the file with ${ownSqliteModule}, in WAL mode`,
          async run() {
            const specifier: string = ownSqliteModule
            const own = (await import(specifier)) as { Database?: new () => object; DatabaseSync?: new () => object }
            const db = await openSqlite(join(dir, 'opened.db'))
            try {
              expect(db).toBeInstanceOf((own.Database ?? own.DatabaseSync)!)
              expect({ ...(db.prepare('PRAGMA journal_mode').get() as object) }).toEqual({ journal_mode: 'wal' })
            } finally {
              db.close()
            }
          },
        },
        {
          name: 'a closed connection: every call fails with StoreUnavailableError naming the closed database, none waits for the writer',
          async run() {
            const db = await openSqlite(join(dir, 'closed.db'))
            // A turn that waited for the writer would take the whole minute, and say so.
            const store = sqliteStore({ db, busyTimeoutMs: 60_000 })
            store.migrate()
            const leased = leasedSqliteStore({ db, busyTimeoutMs: 60_000 })
            db.close()
            const calls = [
              () => store.transaction(() => 1),
              () => store.transaction(() => 2),
              () => store.outbox.pending(),
              () => store.outbox.pending(),
              () => leased.claim('s', 'k', 'fp', 1_000, 60_000),
              () => leased.claim('s', 'k', 'fp', 1_000, 60_000),
            ]
            for (const call of calls) {
              const error = await call().then(
                () => undefined,
                (thrown: unknown) => thrown,
              )
              expect(error).toBeInstanceOf(StoreUnavailableError)
              expect((error as Error).message).toMatch(/^SQLite is unavailable: /)
            }
          },
        },
      ],
      close: async () => rmSync(dir, { recursive: true, force: true }),
    }
  },
}
