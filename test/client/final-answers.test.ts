// Which answers the client retries, against a real idem-protected server on Postgres:
// a stored answer comes back as a replay and can never change, so it is final the first
// time it arrives (issue 49 item 1); only idem's own in-flight 409 is waited for.
import type { AddressInfo } from 'node:net'
import { serve, type ServerType } from '@hono/node-server'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createClient, ProblemError, type ClientOptions, type RetryEvent } from '../../src/client/index.js'
import { idempotency, type IdempotencyContext } from '../../src/http/fetch/index.js'
import { postgresStore, type PgClient } from '../../src/stores/postgres/index.js'
import { startFaultProxy, type FaultProxy } from '../../src/testing/index.js'
import { testSchema, type TestSchema } from '../support/postgres.js'

const db = await testSchema('idem_client_final')
afterAll(() => db?.drop())

// A route's own problem, as an app would answer a business conflict.
const EMAIL_TAKEN = { type: 'https://api.example.test/problems/email-taken', title: 'Email already registered', status: 409, code: 'email-taken' }

describe.skipIf(db === undefined)('the client stops at a final answer from an idem-protected server', () => {
  const { pool, schema } = db as TestSchema
  let server: ServerType
  let url = ''
  let proxy: FaultProxy
  // Requests to drop the answer of once, by URL: the route runs and commits, the client sees a lost response.
  const dropOnce = new Set<string>()
  // Per key: how many requests reached the server, and how many times a route ran.
  const arrived = new Map<string, number>()
  const ran = new Map<string, number>()
  const count = (map: Map<string, number>, key: string): void => void map.set(key, (map.get(key) ?? 0) + 1)
  let releaseSlow = (): void => {}
  let slowHeld = (): void => {}
  const held = new Promise<void>((resolve) => (slowHeld = resolve))

  beforeAll(async () => {
    const store = postgresStore({ pool, schema })
    await store.migrate()
    await pool.query(`CREATE TABLE "${schema}".accounts (email text PRIMARY KEY)`)
    const scope = (request: Request): string => request.headers.get('x-account') ?? 'anonymous'
    // Problem types renamed, as a team that links its own docs would: the client must still know idem's in-flight 409.
    const signups = idempotency<PgClient>({ store, scope, problemTypes: 'https://api.example.test/problems' })
    // A server that stores every answer, transient ones included (a custom storeStatus).
    const storesAll = idempotency<PgClient>({ store, scope, storeStatus: () => true })
    const slow = new Promise<void>((resolve) => (releaseSlow = resolve))

    async function signup(request: Request, idem: IdempotencyContext<PgClient> | undefined): Promise<Response> {
      if (idem === undefined) return new Response('unprotected', { status: 500 })
      count(ran, idem.key)
      const { email } = (await request.json()) as { email: string }
      const { rowCount } = await idem.tx.query(`INSERT INTO "${schema}".accounts (email) VALUES ($1) ON CONFLICT DO NOTHING`, [email])
      if (email.startsWith('slow')) {
        slowHeld()
        await slow
      }
      if (rowCount === 0) return Response.json(EMAIL_TAKEN, { status: 409, headers: { 'content-type': 'application/problem+json' } })
      return Response.json({ email }, { status: 201 })
    }
    async function answerWith(request: Request, idem: IdempotencyContext<PgClient> | undefined): Promise<Response> {
      if (idem === undefined) return new Response('unprotected', { status: 500 })
      count(ran, idem.key)
      const { status } = (await request.json()) as { status: number }
      return Response.json({ status }, { status })
    }

    const port = await new Promise<number>((resolve) => {
      server = serve(
        {
          hostname: '127.0.0.1',
          port: 0,
          fetch: (request: Request) => {
            count(arrived, (request.headers.get('idempotency-key') ?? '').replace(/^"|"$/g, ''))
            return new URL(request.url).pathname === '/signups' ? signups(request, signup) : storesAll(request, answerWith)
          },
        },
        (info: AddressInfo) => resolve(info.port),
      )
    })
    url = `http://127.0.0.1:${port}`
    proxy = await startFaultProxy({ target: url, dropResponseProbability: 1, droppable: ({ url: path }) => dropOnce.delete(path) })
  })
  afterAll(async () => {
    releaseSlow()
    await proxy?.close()
    await new Promise((resolve) => server?.close(resolve))
  })

  const fast: ClientOptions = { backoff: { baseMs: 1, maxMs: 5 } }
  const post = (body: object): RequestInit => ({
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-account': 'acct-final' },
    body: JSON.stringify(body),
  })
  const failure = (call: Promise<unknown>): Promise<ProblemError> =>
    call.then(
      () => expect.fail('the call succeeded'),
      (error: unknown) => {
        expect(error).toBeInstanceOf(ProblemError)
        return error as ProblemError
      },
    )

  it("throws a route's 409 at once, not retryable, and again as a replay when the same key comes back later", async () => {
    const client = createClient(fast)
    const registered = await client.fetch(`${url}/signups`, post({ email: 'ada@example.test' }), { key: 'signup-ada-1' })
    expect(registered.response.status).toBe(201)

    const first = await failure(client.fetch(`${url}/signups`, post({ email: 'ada@example.test' }), { key: 'signup-ada-2' }))
    expect(first).toMatchObject({ status: 409, code: 'email-taken', title: 'Email already registered', attempts: 1, retryable: false, replayed: false })
    expect(arrived.get('signup-ada-2')).toBe(1)
    // A job queue that retries the failed job later, with its key: the stored 409, final again.
    const later = await failure(client.fetch(`${url}/signups`, post({ email: 'ada@example.test' }), { key: 'signup-ada-2' }))
    expect(later).toMatchObject({ status: 409, code: 'email-taken', attempts: 1, retryable: false, replayed: true })
    expect(arrived.get('signup-ada-2')).toBe(2)
    expect(ran.get('signup-ada-2')).toBe(1)
  })

  it('stops at the replayed 409 after a lost response: one retry for the lost answer, none for the replay', async () => {
    await createClient(fast).fetch(`${url}/signups`, post({ email: 'grace@example.test' }), { key: 'signup-grace-1' })
    dropOnce.add('/signups?lost=1')
    const retries: RetryEvent[] = []
    const error = await failure(
      createClient({ ...fast, onRetry: (e) => retries.push(e) }).fetch(`${proxy.url}/signups?lost=1`, post({ email: 'grace@example.test' }), { key: 'signup-grace-2' }),
    )
    expect(error).toMatchObject({ status: 409, code: 'email-taken', attempts: 2, retryable: false, replayed: true })
    expect(error.headers.get('idempotent-replayed')).toBe('true')
    expect(retries).toMatchObject([{ attempt: 1, reason: 'network' }])
    expect(arrived.get('signup-grace-2')).toBe(2)
    expect(ran.get('signup-grace-2')).toBe(1)
  })

  it.each([408, 429, 503])('retries a fresh %i, and stops at its replay from a server that stores it', async (status) => {
    const key = `stored-${status}`
    const retries: RetryEvent[] = []
    const error = await failure(createClient({ ...fast, onRetry: (e) => retries.push(e) }).fetch(`${url}/answer`, post({ status }), { key }))
    expect(error).toMatchObject({ status, attempts: 2, retryable: false, replayed: true })
    expect(retries).toMatchObject([{ attempt: 1, reason: 'status', status }])
    expect(arrived.get(key)).toBe(2)
    expect(ran.get(key)).toBe(1)
  })

  it("waits out idem's in-flight 409 under renamed problem types, then gets the first call's answer replayed", async () => {
    const key = 'signup-slow'
    const first = createClient(fast).fetch(`${url}/signups`, post({ email: 'slow@example.test' }), { key })
    // The first holds the key before the duplicate is sent.
    await held
    // What the duplicate will get: a 409 whose type is the renamed one, with idem's code.
    const probe = await fetch(`${url}/signups`, { ...post({ email: 'slow@example.test' }), headers: { ...post({}).headers, 'idempotency-key': `"${key}"` } })
    expect(probe.status).toBe(409)
    expect(await probe.json()).toMatchObject({ type: 'https://api.example.test/problems#in-flight', code: 'in-flight' })
    const retries: RetryEvent[] = []
    const duplicate = createClient({
      ...fast,
      deadlineMs: 20_000,
      onRetry: (e) => {
        retries.push(e)
        // The first may commit now that the duplicate has been turned away once.
        releaseSlow()
      },
    }).fetch(`${url}/signups`, post({ email: 'slow@example.test' }), { key })
    const [a, b] = await Promise.all([first, duplicate])
    expect(retries[0]).toMatchObject({ attempt: 1, reason: 'status', status: 409, retryAfter: true })
    expect(a).toMatchObject({ attempts: 1, replayed: false })
    expect(b).toMatchObject({ replayed: true })
    expect(await b.response.json()).toEqual(await a.response.json())
    expect(ran.get(key)).toBe(1)
  })
})
