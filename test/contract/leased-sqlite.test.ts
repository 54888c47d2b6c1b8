import Database from 'better-sqlite3'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe } from 'vitest'
import { leasedSqliteStore } from '../../src/stores/sqlite/index.js'
import { leasedStoreContract } from '../../src/testing/index.js'
import { itFulfils } from '../support/contract.js'

describe('sqlite leased store contract (a real file in WAL mode)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'idem-leased-contract-'))
  const db = new Database(join(dir, 'leased.db'))
  db.pragma('journal_mode = WAL')
  const store = leasedSqliteStore({ db })
  store.migrate()
  afterAll(() => {
    db.close()
    rmSync(dir, { recursive: true, force: true })
  })

  itFulfils(leasedStoreContract(() => ({
    store,
    unavailableStore: () => {
      const closed = new Database(join(dir, 'closed.db'))
      const down = leasedSqliteStore({ db: closed })
      down.migrate()
      closed.close()
      return down
    },
  })))
})
