import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, it } from 'vitest'
import { leasedSqliteStore } from '../../src/stores/sqlite/index.js'
import { leasedStoreContract } from '../../src/testing/index.js'
import { itFulfils } from '../support/contract.js'
import { sqliteDrivers } from '../support/sqlite.js'

const { available, missing } = await sqliteDrivers()

for (const driver of available) {
  describe(`sqlite leased store contract on ${driver.name} (a real file in WAL mode)`, () => {
    const dir = mkdtempSync(join(tmpdir(), 'idem-leased-contract-'))
    const db = driver.open(join(dir, 'leased.db'))
    db.exec('PRAGMA journal_mode = WAL')
    const store = leasedSqliteStore({ db })
    store.migrate()
    afterAll(() => {
      db.close()
      rmSync(dir, { recursive: true, force: true })
    })

    itFulfils(leasedStoreContract(() => ({
      store,
      unavailableStore: () => {
        const closed = driver.open(join(dir, 'closed.db'))
        const down = leasedSqliteStore({ db: closed })
        down.migrate()
        closed.close()
        return down
      },
    })))
  })
}
for (const what of missing) it.skip(`sqlite leased store contract on ${what}`)
