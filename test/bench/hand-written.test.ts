// The hand-written floor of bench:http and bench:peers (bench/hand-written.mjs) must be
// correct, or the floor is not honest: against the real Postgres, a replay returns the
// stored response without running the route, concurrent duplicates run it once, another
// request under the key is refused, and a failed or 5xx route leaves no key behind.
import { afterAll, beforeAll, describe, expect } from 'vitest'
import type pg from 'pg'
import { handWrittenKeys, handWrittenTable } from '../../bench/hand-written.mjs'
import { handWrittenCases } from './support/hand-written-cases.js'
import { testSchema, type TestSchema } from '../support/postgres.js'

const db = await testSchema('hand_written', 20)

describe.skipIf(db === undefined)('the hand-written key handling of the benches', () => {
  const { pool, schema } = db as TestSchema
  const hand = handWrittenKeys({ pool, schema })
  let runs = 0

  beforeAll(async () => {
    await pool.query(handWrittenTable(schema))
    await pool.query(`CREATE TABLE "${schema}".orders (id bigserial PRIMARY KEY, body jsonb NOT NULL)`)
  })
  afterAll(() => db?.drop())

  /** The benches' route: one INSERT on the transaction's client; slow enough for duplicates to overlap. */
  const route = (body: string, delayMs = 0) => async (client: pg.PoolClient) => {
    runs++
    const { rows } = await client.query(`INSERT INTO "${schema}".orders (body) VALUES ($1) RETURNING id`, [body])
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs))
    return { status: 201, body: JSON.stringify({ id: rows[0].id }) }
  }
  const rowsOf = async (body: string) =>
    Number((await pool.query(`SELECT count(*) FROM "${schema}".orders WHERE body = $1::jsonb`, [body])).rows[0].count)

  handWrittenCases<pg.PoolClient>(() => ({
    handle: (request, work) => hand.handle(request, work),
    route,
    rowsOf,
    runs: () => runs,
    // Every connection went back to the pool usable (the key row is written only at commit).
    leftNothing: async () => expect(pool.totalCount - pool.idleCount).toBe(0),
  }))
})
