import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createIdem } from '../../src/index.js'
import { mysqlStore } from '../../src/stores/mysql/index.js'
import { killAfterWrite } from '../support/crash.js'
import { testDatabase, type TestDatabase } from '../support/mysql.js'

const db = await testDatabase('idem_mysql_crash', 4)

describe.skipIf(db === undefined)('mysql: a process killed inside the function', () => {
  const { pool, url } = db as TestDatabase
  beforeAll(async () => {
    await mysqlStore({ pool }).migrate()
    await pool.query('CREATE TABLE effects (id VARCHAR(300) NOT NULL) ENGINE=InnoDB')
  })
  afterAll(() => db?.drop())

  it('leaves no effect and no key, and the retry runs exactly once', async () => {
    const key = 'order-killed'
    await killAfterWrite(['mysql', url, key])
    const rows = async (text: string) => Number(((await pool.query(text, [key]))[0] as { n: number }[])[0]!.n)
    const effects = () => rows('SELECT COUNT(*) AS n FROM effects WHERE id = ?')
    // Any row of the key: the claim's placeholder is rolled back with the effect.
    const records = () => rows('SELECT COUNT(*) AS n FROM idem_keys WHERE `key` = ?')
    expect(await effects()).toBe(0)
    expect(await records()).toBe(0)

    // The dead process's connection, and its row lock, go when the server notices the closed socket: the retry may wait for that.
    const idem = createIdem({ store: mysqlStore({ pool }), waitMs: 10_000 })
    let runs = 0
    const retry = () =>
      idem.run({ scope: 'crash', key, input: { key } }, async (tx) => {
        runs++
        await tx.query('INSERT INTO effects (id) VALUES (?)', [key])
        return 'done'
      })
    expect(await retry()).toEqual({ value: 'done', replayed: false, stored: true })
    expect(await retry()).toEqual({ value: 'done', replayed: true, stored: true })
    expect(runs).toBe(1)
    expect(await effects()).toBe(1)
    expect(await records()).toBe(1)
  })
})
