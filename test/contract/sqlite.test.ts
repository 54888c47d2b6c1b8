import Database from 'better-sqlite3'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe } from 'vitest'
import { sqliteStore, type SqliteDatabase } from '../../src/stores/sqlite/index.js'
import { itFulfilsTheStoreContract } from '../support/contract.js'

describe('sqlite store contract (a real file in WAL mode)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'idem-sqlite-contract-'))
  const db = new Database(join(dir, 'contract.db'))
  db.pragma('journal_mode = WAL')
  const store = sqliteStore({ db })
  store.migrate()
  db.exec('CREATE TABLE effects (id TEXT NOT NULL)')
  const count = db.prepare('SELECT count(*) AS n FROM effects WHERE id = ?')
  afterAll(() => {
    db.close()
    rmSync(dir, { recursive: true, force: true })
  })

  itFulfilsTheStoreContract(() => ({
    store,
    writeEffect: (tx: SqliteDatabase, id: string) => {
      tx.prepare('INSERT INTO effects (id) VALUES (?)').run(id)
    },
    countEffects: (id: string) => (count.get(id) as { n: number }).n,
    unavailableStore: () => {
      const closed = new Database(join(dir, 'closed.db'))
      const store = sqliteStore({ db: closed })
      store.migrate()
      closed.close()
      return store
    },
  }))
})
