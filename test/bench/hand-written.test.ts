// The hand-written floor of bench:http and bench:peers (bench/hand-written.mjs) must be
// correct, or the floor is not honest: against the real Postgres, a replay returns the
// stored response without running the route, concurrent duplicates run it once, another
// request under the key is refused, and a failed or 5xx route leaves no key behind.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type pg from 'pg'
import { fingerprintOf, handWrittenKeys, handWrittenTable } from '../../bench/hand-written.mjs'
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
  const request = (key: string, body: string) => ({ scope: 'acct', key, fingerprint: fingerprintOf('POST', '/orders', body) })
  const rowsOf = async (body: string) =>
    Number((await pool.query(`SELECT count(*) FROM "${schema}".orders WHERE body = $1::jsonb`, [body])).rows[0].count)

  it('answers a retry with the stored response, without running the route', async () => {
    const body = JSON.stringify({ ref: 'replay' })
    const before = runs
    const first = await hand.handle(request('k-replay', body), route(body))
    const again = await hand.handle(request('k-replay', body), route(body))
    expect(first.status).toBe(201)
    expect(again).toEqual({ status: 201, body: first.body, replayed: true })
    expect(runs - before).toBe(1)
    expect(await rowsOf(body)).toBe(1)
  })

  it('runs concurrent duplicates once, every one getting the same answer', async () => {
    for (let round = 0; round < 3; round++) {
      const body = JSON.stringify({ ref: `race-${round}` })
      const before = runs
      const answers = await Promise.all(Array.from({ length: 20 }, () => hand.handle(request(`k-race-${round}`, body), route(body, 20))))
      expect(runs - before).toBe(1)
      expect(await rowsOf(body)).toBe(1)
      expect(new Set(answers.map((answer) => `${answer.status} ${answer.body}`)).size).toBe(1)
      expect(answers.filter((answer) => answer.replayed !== true)).toHaveLength(1)
    }
  })

  it('refuses another request under a used key, and keeps the first answer', async () => {
    const body = JSON.stringify({ ref: 'first' })
    const other = JSON.stringify({ ref: 'other' })
    const first = await hand.handle(request('k-other', body), route(body))
    expect((await hand.handle(request('k-other', other), route(other))).status).toBe(422)
    expect(await rowsOf(other)).toBe(0)
    expect(await hand.handle(request('k-other', body), route(body))).toEqual({ ...first, replayed: true })
  })

  it('keeps nothing of a route that throws or answers 5xx, and runs the retry afresh', async () => {
    const body = JSON.stringify({ ref: 'failed' })
    await expect(
      hand.handle(request('k-failed', body), async (client) => {
        await route(body)(client)
        throw new Error('the route failed after its INSERT')
      }),
    ).rejects.toThrow('the route failed')
    const unavailable = await hand.handle(request('k-failed', body), async (client) => ({ ...(await route(body)(client)), status: 503 }))
    expect(unavailable.status).toBe(503)
    expect(await rowsOf(body)).toBe(0)
    const retried = await hand.handle(request('k-failed', body), route(body))
    expect(retried.status).toBe(201)
    expect(retried.replayed).toBeUndefined()
    expect(await rowsOf(body)).toBe(1)
    // Every connection went back to the pool usable.
    expect(pool.totalCount - pool.idleCount).toBe(0)
  })
})
