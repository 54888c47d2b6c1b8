// The hand-written MySQL floor of bench:mysql and bench:http (bench/hand-written-mysql.mjs)
// must be correct, or the floor is not honest: against the real MariaDB, a replay returns
// the stored answer without running the route, concurrent duplicates run it once,
// another request under the key is refused, and a failed or 5xx route leaves no key behind.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import mysql from 'mysql2/promise'
import { handWrittenMysqlKeys, handWrittenMysqlTable } from '../../bench/hand-written-mysql.mjs'
import { handWrittenCases, request } from './support/hand-written-cases.js'
import { testDatabase, type TestDatabase } from '../support/mysql.js'

const db = await testDatabase('hand_written_mysql', 2)

describe.skipIf(db === undefined)('the hand-written MySQL key handling of the benches', () => {
  const { url } = db as TestDatabase
  const pool = mysql.createPool({ uri: url, connectionLimit: 20, charset: 'utf8mb4', multipleStatements: true })
  const hand = handWrittenMysqlKeys({ pool })
  let runs = 0

  beforeAll(async () => {
    await pool.query(handWrittenMysqlTable())
    await pool.query('CREATE TABLE orders (id BIGINT AUTO_INCREMENT PRIMARY KEY, body TEXT NOT NULL) ENGINE=InnoDB')
  })
  afterAll(async () => {
    await pool.end()
    await db?.drop()
  })

  /** The benches' route: one INSERT on the transaction's connection; slow enough for duplicates to overlap. */
  const route = (body: string, delayMs = 0) => async (connection: mysql.PoolConnection) => {
    runs++
    const [result] = await connection.query<mysql.ResultSetHeader>('INSERT INTO orders (body) VALUES (?)', [body])
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs))
    return { status: 201, body: JSON.stringify({ id: result.insertId }) }
  }
  const rowsOf = async (body: string) => Number((await pool.query<mysql.RowDataPacket[]>('SELECT COUNT(*) AS n FROM orders WHERE body = ?', [body]))[0][0]?.n)
  const keyRows = async (key: string) => Number((await pool.query<mysql.RowDataPacket[]>('SELECT COUNT(*) AS n FROM hand_keys WHERE `key` = ?', [key]))[0][0]?.n)

  it('refuses a pool without multiple statements', () => {
    const plain = mysql.createPool({ uri: url, connectionLimit: 1 })
    expect(() => handWrittenMysqlKeys({ pool: plain })).toThrow('multipleStatements')
    return plain.end()
  })

  it('runs the route once more for duplicates that waited on a holder that rolled back', async () => {
    const body = JSON.stringify({ ref: 'holder-failed' })
    const before = runs
    let first = true
    const answers = await Promise.all(
      Array.from({ length: 10 }, () =>
        hand.handle(request('k-holder-failed', body), async (connection) => {
          const answer = await route(body, 20)(connection)
          if (first) {
            first = false
            return { ...answer, status: 503 }
          }
          return answer
        }),
      ),
    )
    // The holder's 503 is not kept; one waiting duplicate claims the key and runs the route, the rest replay it.
    expect(runs - before).toBe(2)
    expect(await rowsOf(body)).toBe(1)
    expect(answers.filter((answer) => answer.status === 503)).toHaveLength(1)
    expect(answers.filter((answer) => answer.status === 201 && answer.replayed !== true)).toHaveLength(1)
    expect(answers.filter((answer) => answer.replayed === true)).toHaveLength(8)
  })

  handWrittenCases<mysql.PoolConnection>(() => ({
    handle: (request, work) => hand.handle(request, work),
    route,
    rowsOf,
    runs: () => runs,
    leftNothing: async (key) => expect(await keyRows(key)).toBe(0),
  }))
})
