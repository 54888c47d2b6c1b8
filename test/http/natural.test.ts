import { Hono } from 'hono'
import { afterAll, describe, expect, it } from 'vitest'
import { deleteResponse, putResponse } from '../../src/http/fetch/index.js'
import { idempotency } from '../../src/http/adapters/hono/index.js'
import { testSchema, type TestSchema } from '../support/postgres.js'
import { postgresStore } from '../../src/stores/postgres/index.js'

// The documented pattern (docs/http.md, "Natural idempotency"): PUT by id is an upsert
// and DELETE answers 204 whether or not the row was there, so both are safe to retry
// without a key; the middleware (default methods POST, PATCH) leaves them alone.

const db = await testSchema('idem_http_natural')

describe.skipIf(db === undefined)('natural idempotency: PUT by id and DELETE (Hono on Postgres)', () => {
  const { pool, schema } = db as TestSchema
  const table = `"${schema}".things`
  const app = new Hono()
  afterAll(() => db?.drop())

  app.use(idempotency({ store: postgresStore({ pool, schema }), scope: () => 'acct' }))
  app.put('/things/:id', async (c) => {
    const id = c.req.param('id')
    const { rows } = await pool.query(
      `INSERT INTO ${table} (id, body) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET body = excluded.body RETURNING id, body, (xmax = 0) AS created`,
      [id, await c.req.json()],
    )
    const { created, ...thing } = rows[0] as { id: string; body: unknown; created: boolean }
    return putResponse({ created, body: thing, location: `/things/${id}` })
  })
  app.delete('/things/:id', async (c) => {
    await pool.query(`DELETE FROM ${table} WHERE id = $1`, [c.req.param('id')])
    return deleteResponse()
  })

  it('a PUT creates (201 + Location), its retry replaces with the same state (200, same body), and no key is needed', async () => {
    await pool.query(`CREATE TABLE ${table} (id text PRIMARY KEY, body jsonb NOT NULL)`)
    const put = async (): Promise<Response> => app.request('/things/t1', { method: 'PUT', headers: { 'content-type': 'application/json' }, body: '{"colour":"blue"}' })
    const first = await put()
    expect(first.status).toBe(201)
    expect(first.headers.get('location')).toBe('/things/t1')
    const retry = await put()
    expect(retry.status).toBe(200)
    expect(retry.headers.get('location')).toBeNull()
    expect(retry.headers.get('content-location')).toBe('/things/t1')
    expect(await retry.json()).toEqual(await first.json())
    const { rows } = await pool.query(`SELECT body FROM ${table}`)
    expect(rows).toEqual([{ body: { colour: 'blue' } }])
  })

  it('a DELETE answers 204 whether the row was there or not, so its retry succeeds too', async () => {
    const del = async (): Promise<Response> => app.request('/things/t1', { method: 'DELETE' })
    const first = await del()
    const retry = await del()
    expect([first.status, retry.status]).toEqual([204, 204])
    expect(await retry.text()).toBe('')
    expect((await app.request('/things/never-existed', { method: 'DELETE' })).status).toBe(204)
    const { rows } = await pool.query(`SELECT count(*)::int AS n FROM ${table}`)
    expect(rows[0].n).toBe(0)
  })
})
