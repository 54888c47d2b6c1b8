import { randomUUID } from 'node:crypto'
import mysql from 'mysql2/promise'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mysqlStore, type MysqlExecutor, type MysqlStore } from '../../src/stores/mysql/index.js'
import { inboxTableContract, keyStoreContract, onceTableContract, outboxTableContract } from '../../src/testing/index.js'
import { itFulfils } from '../support/contract.js'
import { testDatabase, type TestDatabase } from '../support/mysql.js'

const db = await testDatabase('idem_contract', 30)

describe.skipIf(db === undefined)('mysql store contracts (MariaDB or MySQL, InnoDB)', () => {
  const { pool } = db as TestDatabase
  let store: MysqlStore
  const down: mysql.Pool[] = []
  beforeAll(async () => {
    store = mysqlStore({ pool })
    await store.migrate()
    await pool.query('CREATE TABLE effects (id VARCHAR(300) NOT NULL) ENGINE=InnoDB')
  })
  afterAll(async () => {
    for (const p of down) await p.end()
    await db?.drop()
  })

  const unavailableStore = (): MysqlStore => {
    // Nothing listens on port 1: connecting is refused at once.
    const closed = mysql.createPool({ uri: 'mysql://root@127.0.0.1:1/test', connectTimeout: 2_000 })
    down.push(closed)
    return mysqlStore({ pool: closed })
  }
  const effects = {
    writeEffect: async (tx: MysqlExecutor, id: string) => {
      await tx.query('INSERT INTO effects (id) VALUES (?)', [id])
    },
    countEffects: async (id: string) => {
      const [rows] = await pool.query('SELECT COUNT(*) AS n FROM effects WHERE id = ?', [id])
      return Number((rows as { n: number }[])[0]!.n)
    },
  }
  const inTransaction = async (work: (tx: MysqlExecutor) => unknown): Promise<void> => {
    const connection = await pool.getConnection()
    try {
      await connection.beginTransaction()
      await work(connection)
      await connection.commit()
    } catch (error) {
      await connection.rollback()
      throw error
    } finally {
      connection.release()
    }
  }

  describe('keys (KeyStore)', () => itFulfils(keyStoreContract(() => ({ store, ...effects, unavailableStore }))))
  describe('inbox (InboxTable, ids as keys)', () => itFulfils(inboxTableContract(() => ({ store, ...effects, unavailableStore }))))
  describe('outbox (OutboxTable)', () => itFulfils(outboxTableContract(() => ({ store, inTransaction, unavailableStore }))))
  describe('once (OnceTable)', () => itFulfils(onceTableContract(() => ({ store, inTransaction, concurrentTransactions: true }))))

  it('prune() removes expired inbox ids along with expired keys, and keeps live ones', async () => {
    const consumer = `prune-${randomUUID()}`
    for (const [key, retentionMs] of [['gone', 1], ['kept', 60_000]] as const) {
      const session = await store.inbox.begin({ consumer, key, waitMs: 0, retentionMs })
      await session.commit()
    }
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(await store.prune({ batchSize: 1 })).toBeGreaterThanOrEqual(1)
    const [rows] = await pool.query("SELECT CONVERT(`key` USING utf8mb4) AS k FROM idem_keys WHERE scope = ? AND fingerprint <> ''", [`inbox:${consumer}`])
    expect(rows).toEqual([{ k: 'kept' }])
  })
})
