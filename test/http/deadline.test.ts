// A route that never answers must not hold its key, and its transaction, forever. An
// Express 4 app (test/fixtures/overrun-server.mjs) whose routes overrun the engine's
// `deadlineMs`: one throws asynchronously (Express 4 never answers it), one is stuck in a
// query, one sleeps and writes late; on the leased engine one throws, one tries a step
// late. At the deadline the client is answered 503 `overran` with Retry-After, no
// Postgres connection of the app stays in its transaction (pg_stat_activity), the retry
// runs once, a late write or step is refused, and the app's events and log name the route.
import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { PG_URL, testSchema, type TestSchema } from '../support/postgres.js'
import { REDIS_URL, startFixture, testRedis, type Fixture, type TestRedis } from '../leased/support.js'

const DEADLINE_MS = 500
const LEASE_MS = 300
// Far past the deadline: a client that got no answer by then got none at all.
const CLIENT_GIVES_UP_MS = DEADLINE_MS + 4_000

const db = await testSchema('idem_deadline')
const redis = db === undefined ? undefined : await testRedis('deadline')

interface Answer {
  status: number
  code: unknown
  retryAfter: string | null
  replayed: boolean
}

// Keys of this run: an advisory lock is database-wide, whatever the schema.
const run = randomUUID()

async function post(port: string, path: string, key: string): Promise<Answer | 'no answer'> {
  try {
    const response = await fetch(`http://127.0.0.1:${port}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': `"${key}-${run}"` },
      body: '{}',
      signal: AbortSignal.timeout(CLIENT_GIVES_UP_MS),
    })
    const text = await response.text()
    let code: unknown
    try {
      code = (JSON.parse(text) as { code?: unknown }).code
    } catch {
      code = undefined
    }
    return { status: response.status, code, retryAfter: response.headers.get('retry-after'), replayed: response.headers.get('idempotent-replayed') === 'true' }
  } catch {
    return 'no answer'
  }
}

async function notes(port: string): Promise<string[]> {
  return (await (await fetch(`http://127.0.0.1:${port}/notes`)).json()) as string[]
}

/** Polls (a bounded number of times) until `done` holds for what `read` returns; returns the last read. */
async function settled<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  let value = await read()
  for (let i = 0; i < 100 && !done(value); i++) {
    await new Promise((resolve) => setTimeout(resolve, 30))
    value = await read()
  }
  return value
}

describe.skipIf(db === undefined)('a route past deadlineMs on Express 4 and Postgres (createIdem)', () => {
  const { pool, schema } = db as TestSchema
  let app: Fixture
  let port: string

  /** The app's connections that are not idle: in a transaction, or running a query. */
  const busyConnections = async (): Promise<string[]> => {
    const { rows } = await pool.query(
      "SELECT state || ': ' || left(query, 40) AS line FROM pg_stat_activity WHERE application_name = $1 AND state IS DISTINCT FROM 'idle'",
      [schema],
    )
    return rows.map((row: { line: string }) => row.line)
  }
  const payments = async (route: string): Promise<number> =>
    (await pool.query(`SELECT count(*)::int AS n FROM "${schema}".payments WHERE route = $1`, [route])).rows[0].n

  beforeAll(async () => {
    await pool.query(`CREATE TABLE "${schema}".payments (id bigserial PRIMARY KEY, route text NOT NULL)`)
    app = startFixture('overrun-server.mjs', { mode: 'transactional', pgUrl: PG_URL, schema, deadlineMs: DEADLINE_MS })
    port = await app.line('PORT')
  })
  afterAll(async () => {
    app?.child.kill()
    await app?.exited
    // A backend still in a query outlives its client; it would block the schema's drop.
    await pool.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [schema])
    await db?.drop()
  })

  it('a route that throws asynchronously: 503 overran at the deadline, no connection left in its transaction, the retry runs once', async () => {
    const first = await post(port, '/throws', 'k-throws')
    expect.soft(first).toMatchObject({ status: 503, code: 'overran', retryAfter: '1' })
    expect.soft(await settled(busyConnections, (lines) => lines.length === 0)).toEqual([])
    expect.soft(await post(port, '/throws', 'k-throws')).toMatchObject({ status: 201, replayed: false })
    expect.soft(await payments('throws')).toBe(1)
    const seen = await notes(port)
    expect.soft(seen).toContain('overran POST /throws')
    expect.soft(seen.some((line) => line.startsWith('warning route-overran:') && line.includes('POST /throws'))).toBe(true)
  })

  it('a query still running at the deadline is cancelled: its backend leaves, and the retry is not 409', async () => {
    const first = await post(port, '/sleeps', 'k-sleeps')
    expect.soft(first).toMatchObject({ status: 503, code: 'overran' })
    expect.soft(await settled(busyConnections, (lines) => lines.length === 0)).toEqual([])
    expect.soft(await post(port, '/sleeps', 'k-sleeps')).toMatchObject({ status: 201, replayed: false })
    expect.soft(await payments('sleeps')).toBe(1)
  })

  it('a write after the deadline through the overrun transaction is refused, never committed', async () => {
    const first = await post(port, '/late', 'k-late')
    expect.soft(first).toMatchObject({ status: 503, code: 'overran' })
    expect.soft(await post(port, '/late', 'k-late')).toMatchObject({ status: 201, replayed: false })
    const seen = await settled(() => notes(port), (lines) => lines.some((line) => line.startsWith('late write:')))
    expect.soft(seen.find((line) => line.startsWith('late write:'))).toMatch(/^late write: refused/)
    expect.soft(seen).toContain('late answer: headers already sent')
    expect.soft(await payments('late write')).toBe(0)
    expect.soft(await payments('late')).toBe(1)
  })
})

describe.skipIf(db === undefined || redis === undefined)('a route past deadlineMs on Express 4 and Redis (createLeasedIdem)', () => {
  const { schema } = db as TestSchema
  const { prefix } = redis as TestRedis
  let app: Fixture
  let port: string

  beforeAll(async () => {
    app = startFixture('overrun-server.mjs', { mode: 'leased', pgUrl: PG_URL, schema, redisUrl: REDIS_URL, prefix, deadlineMs: DEADLINE_MS, leaseMs: LEASE_MS })
    port = await app.line('PORT')
  })
  afterAll(async () => {
    app?.child.kill()
    await app?.exited
    await redis?.drop()
  })

  it('the heartbeat stops and the lease is let go: 503 overran, then the duplicate runs', async () => {
    const first = await post(port, '/leased-throws', 'k-leased')
    expect.soft(first).toMatchObject({ status: 503, code: 'overran', retryAfter: '1' })
    // Three leases later: a lease still renewed would answer 409 here.
    await new Promise((resolve) => setTimeout(resolve, LEASE_MS * 3))
    expect.soft(await post(port, '/leased-throws', 'k-leased')).toMatchObject({ status: 201, replayed: false })
    expect.soft(await notes(port)).toContain('overran POST /leased-throws')
  })

  it('a step tried after the deadline is refused; the retry stores its own outcome', async () => {
    const first = await post(port, '/leased-late', 'k-leased-late')
    expect.soft(first).toMatchObject({ status: 503, code: 'overran' })
    expect.soft(await post(port, '/leased-late', 'k-leased-late')).toMatchObject({ status: 201, replayed: false })
    const seen = await settled(() => notes(port), (lines) => lines.some((line) => line.startsWith('late step:')))
    expect.soft(seen.find((line) => line.startsWith('late step:'))).toMatch(/^late step: refused/)
    expect.soft(await post(port, '/leased-late', 'k-leased-late')).toMatchObject({ status: 201, replayed: true })
  })
})
