// idem's store contract suites (`idem/testing`) on the runtime's own SQLite and on the
// memory store, as test/contract/ runs them on Node.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { leasedSqliteStore, sqliteStore, type SqliteDatabase } from 'idem/sqlite'
import { memoryLeasedStore, memoryStore, type MemoryTx } from 'idem/memory'
import { inboxTableContract, keyStoreContract, leasedStoreContract, onceTableContract, outboxTableContract } from 'idem/testing'
import type { SliceGroup } from './main.js'
import { SLICE_GROUPS } from './plan.js'
import { ownSqlite } from './runtime.js'

const [sqliteKeys, sqliteLeased, memory] = SLICE_GROUPS.filter((name) => name.startsWith('contract: ')) as [string, string, string]

/** A temporary directory and the runtime's SQLite opener, for one group. */
async function sqliteFiles(label: string) {
  const dir = mkdtempSync(join(tmpdir(), `idem-runtime-${label}-`))
  const open = await ownSqlite()
  return {
    open: (name: string) => open(join(dir, name)),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  }
}

export function contractGroups(): SliceGroup[] {
  return [
    {
      name: sqliteKeys,
      async open() {
        const files = await sqliteFiles('contract')
        const db = files.open('contract.db')
        db.exec('PRAGMA journal_mode = WAL')
        const store = sqliteStore({ db })
        store.migrate()
        db.exec('CREATE TABLE effects (id TEXT NOT NULL)')
        const count = db.prepare('SELECT count(*) AS n FROM effects WHERE id = ?')
        const effects = {
          writeEffect: (tx: SqliteDatabase, id: string) => {
            tx.prepare('INSERT INTO effects (id) VALUES (?)').run(id)
          },
          countEffects: (id: string) => (count.get(id) as { n: number }).n,
        }
        const unavailableStore = () => {
          const closed = files.open('closed.db')
          const down = sqliteStore({ db: closed })
          down.migrate()
          closed.close()
          return down
        }
        const inTransaction = (work: (tx: SqliteDatabase) => unknown): Promise<void> => store.transaction(async (tx) => void (await work(tx)))
        return {
          cases: [
            ...keyStoreContract(() => ({ store, ...effects, unavailableStore })),
            ...inboxTableContract(() => ({ store, ...effects, unavailableStore })),
            ...outboxTableContract(() => ({ store, inTransaction, unavailableStore })),
            ...onceTableContract(() => ({ store, inTransaction, concurrentTransactions: false })),
          ],
          async close() {
            db.close()
            files.remove()
          },
        }
      },
    },
    {
      name: sqliteLeased,
      async open() {
        const files = await sqliteFiles('leased')
        const db = files.open('leased.db')
        db.exec('PRAGMA journal_mode = WAL')
        const store = leasedSqliteStore({ db })
        store.migrate()
        const unavailableStore = () => {
          const closed = files.open('closed.db')
          const down = leasedSqliteStore({ db: closed })
          down.migrate()
          closed.close()
          return down
        }
        return {
          cases: leasedStoreContract(() => ({ store, unavailableStore })),
          async close() {
            db.close()
            files.remove()
          },
        }
      },
    },
    {
      name: memory,
      async open() {
        const store = memoryStore()
        const effects = {
          writeEffect: (tx: MemoryTx, id: string) => {
            tx.set('effects', id, ((tx.get('effects', id) as number | undefined) ?? 0) + 1)
          },
          countEffects: (id: string) => (store.collection('effects').get(id) as number | undefined) ?? 0,
        }
        const unavailableStore = () => {
          const closed = memoryStore()
          closed.close()
          return closed
        }
        const leased = memoryLeasedStore()
        const unavailableLeased = () => {
          const closed = memoryLeasedStore()
          closed.close()
          return closed
        }
        return {
          cases: [
            ...keyStoreContract(() => ({ store, ...effects, unavailableStore })),
            ...inboxTableContract(() => ({ store, ...effects, unavailableStore })),
            ...leasedStoreContract(() => ({ store: leased, unavailableStore: unavailableLeased })),
          ],
          close: async () => {},
        }
      },
    },
  ]
}
