import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, it } from 'vitest'
import { sqliteStore, type SqliteDatabase } from '../../src/stores/sqlite/index.js'
import { inboxTableContract, keyStoreContract, onceTableContract, outboxTableContract } from '../../src/testing/index.js'
import { itFulfils } from '../support/contract.js'
import { sqliteDrivers } from '../support/sqlite.js'

const { available, missing } = await sqliteDrivers()

for (const driver of available) {
  describe(`sqlite store contracts on ${driver.name} (a real file in WAL mode)`, () => {
    const dir = mkdtempSync(join(tmpdir(), 'idem-sqlite-contract-'))
    const db = driver.open(join(dir, 'contract.db'))
    db.exec('PRAGMA journal_mode = WAL')
    const store = sqliteStore({ db })
    store.migrate()
    db.exec('CREATE TABLE effects (id TEXT NOT NULL)')
    const count = db.prepare('SELECT count(*) AS n FROM effects WHERE id = ?')
    afterAll(() => {
      db.close()
      rmSync(dir, { recursive: true, force: true })
    })

    const effects = {
      writeEffect: (tx: SqliteDatabase, id: string) => {
        tx.prepare('INSERT INTO effects (id) VALUES (?)').run(id)
      },
      countEffects: (id: string) => (count.get(id) as { n: number }).n,
    }
    const unavailableStore = () => {
      const closed = driver.open(join(dir, 'closed.db'))
      const down = sqliteStore({ db: closed })
      down.migrate()
      closed.close()
      return down
    }
    // The store's own queue for write transactions, so the cases never fold into an engine call's.
    const inTransaction = (work: (tx: SqliteDatabase) => unknown): Promise<void> => store.transaction(async (tx) => void (await work(tx)))

    describe('keys (KeyStore)', () => itFulfils(keyStoreContract(() => ({ store, ...effects, unavailableStore }))))
    describe('inbox (InboxTable, ids as keys)', () => itFulfils(inboxTableContract(() => ({ store, ...effects, unavailableStore }))))
    describe('outbox (OutboxTable)', () => itFulfils(outboxTableContract(() => ({ store, inTransaction, unavailableStore }))))
    describe('once (OnceTable)', () => itFulfils(onceTableContract(() => ({ store, inTransaction, concurrentTransactions: false }))))
  })
}
// Said, not hidden: which driver this Node cannot run.
for (const what of missing) it.skip(`sqlite store contracts on ${what}`)
