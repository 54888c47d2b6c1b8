import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import type pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createIdem, fingerprintValue, StoreUnavailableError } from '../../src/index.js'
import { createMemo } from '../../src/data/index.js'
import { idempotency } from '../../src/http/fetch/index.js'
import { createInbox } from '../../src/queue/index.js'
import { postgresStore } from '../../src/stores/postgres/index.js'
import type { PgClient } from '../../src/stores/postgres/driver/types.js'
import { backendGone, backendPid, failOnUncaughtErrors, handoverDeathProxy, storePool, until } from '../support/connection-loss.js'
import { PG_URL, testSchema, type TestSchema } from '../support/postgres.js'
import { unique } from '../queue/support.js'

// A Postgres connection that dies while idem holds it (inside a call's transaction) used
// to end the whole process with an unhandled 'error' event. Now the call fails with
// StoreUnavailableError, the dead client is destroyed, and everything else carries on.

const db = await testSchema('idem_pg_connloss')

describe.skipIf(db === undefined)('postgres: the connection dies while the handler runs in idem\'s transaction', () => {
  const { pool: admin, schema } = db as TestSchema
  failOnUncaughtErrors()
  const effects = `"${schema}".effects`
  const pools: Array<pg.Pool & { errors: Error[] }> = []
  const poolFor = (name: string, options?: Parameters<typeof storePool>[1]) => {
    const pool = storePool(name, options)
    pools.push(pool)
    return pool
  }
  const pool = poolFor('idem-connloss')
  const store = postgresStore({ pool, schema })

  beforeAll(async () => {
    await store.migrate()
    await admin.query(`CREATE TABLE ${effects} (id text NOT NULL)`)
  })
  afterAll(async () => {
    for (const p of pools) {
      // A dead connection idem held is destroyed with the call, never reported to the pool.
      expect(p.errors).toEqual([])
      await p.end()
    }
    await db?.drop()
  })

  const count = async (id: string, table = effects, column = 'id') =>
    (await admin.query(`SELECT count(*)::int AS n FROM ${table} WHERE ${column} = $1`, [id])).rows[0].n as number
  const insert = (tx: PgClient, id: string) => tx.query(`INSERT INTO ${effects} (id) VALUES ($1)`, [id])

  // Each has the server end the process behind `tx` between two statements of the
  // transaction (another session terminates it, or its own timeout does), and resolves
  // once it is gone.
  const deaths: Record<string, (tx: PgClient) => Promise<number>> = {
    pg_terminate_backend: async (tx) => {
      const pid = await backendPid(tx)
      await admin.query('SELECT pg_terminate_backend($1, 10000)', [pid])
      return pid
    },
    idle_in_transaction_session_timeout: async (tx) => {
      const pid = await backendPid(tx)
      await tx.query('SET LOCAL idle_in_transaction_session_timeout = 200')
      await backendGone(admin, pid)
      return pid
    },
  }

  describe.each(Object.keys(deaths))('ended by %s', (death) => {
    const die = deaths[death]!

    it.each(['queries again', 'returns'])('engine: the handler %s after the death: StoreUnavailableError, nothing committed, the retry runs once', async (after) => {
      const idem = createIdem({ store })
      const key = unique('k')
      let runs = 0
      const call = (dies: boolean) =>
        idem.run({ scope: 'connloss', key, input: { key } }, async (tx) => {
          runs++
          await insert(tx, key)
          if (dies) {
            await die(tx)
            if (after === 'queries again') await insert(tx, `${key}-after`)
          }
          return { ok: key }
        })
      const failure = await call(true).catch((error: unknown) => error)
      expect(failure).toBeInstanceOf(StoreUnavailableError)
      expect((failure as StoreUnavailableError).retryAfterSeconds).toBe(1)
      expect(await count(key)).toBe(0)
      expect(await count(key, `"${schema}".idem_keys`, 'key')).toBe(0)

      expect(await call(false)).toEqual({ value: { ok: key }, replayed: false, stored: true })
      expect(await call(false)).toEqual({ value: { ok: key }, replayed: true, stored: true })
      expect(runs).toBe(2)
      expect(await count(key)).toBe(1)
    })

    it('engine: a handler that catches the dead connection\'s error and returns still fails with StoreUnavailableError', async () => {
      const idem = createIdem({ store })
      const key = unique('k')
      const call = idem.run({ scope: 'connloss', key, input: 1 }, async (tx) => {
        await insert(tx, key)
        await die(tx)
        const swallowed = await insert(tx, key).then(() => undefined, (error: unknown) => error)
        return { swallowed: String(swallowed) }
      })
      await expect(call).rejects.toBeInstanceOf(StoreUnavailableError)
      expect(await count(key)).toBe(0)
    })

    it('HTTP: 503 problem+json with Retry-After; the retry with the same key is 201, then replayed', async () => {
      const protect = idempotency<PgClient>({ store, scope: () => 'acct' })
      const key = unique('order')
      const request = () =>
        new Request('http://shop.test/orders', {
          method: 'POST',
          headers: { 'idempotency-key': `"${key}"`, 'content-type': 'application/json' },
          body: JSON.stringify({ item: 'book' }),
        })
      const route = (dies: boolean) => async (_request: Request, idem: { tx: PgClient } | undefined) => {
        await insert(idem!.tx, key)
        if (dies) {
          await die(idem!.tx)
          await insert(idem!.tx, key)
        }
        return Response.json({ order: key }, { status: 201 })
      }

      const first = await protect(request(), route(true))
      expect(first.status).toBe(503)
      expect(first.headers.get('retry-after')).toBe('1')
      expect(first.headers.get('content-type')).toBe('application/problem+json')
      expect(await first.json()).toMatchObject({ status: 503, code: 'store-unavailable' })
      expect(await count(key)).toBe(0)

      const retry = await protect(request(), route(false))
      expect(retry.status).toBe(201)
      expect(await retry.json()).toEqual({ order: key })
      const replay = await protect(request(), route(false))
      expect(replay.status).toBe(201)
      expect(replay.headers.get('idempotent-replayed')).toBe('true')
      expect(await count(key)).toBe(1)
    })

    it('inbox: consume rejects with StoreUnavailableError (redeliver, no attempt counted); the redelivery is processed once', async () => {
      const inbox = createInbox<PgClient>({ store, consumer: unique('c') })
      const id = unique('m')
      let runs = 0
      const handler = (dies: boolean) => async (tx: PgClient) => {
        runs++
        await insert(tx, id)
        if (dies) {
          await die(tx)
          await insert(tx, id)
        }
      }
      await expect(inbox.consume({ id, body: { n: 1 }, deliveryCount: 1 }, handler(true))).rejects.toBeInstanceOf(StoreUnavailableError)
      expect(await count(id)).toBe(0)
      // A store outage is not the message's fault: it does not count towards dead-lettering.
      expect(await count(id, `"${schema}".idem_inbox_attempts`, 'message_key')).toBe(0)

      expect(await inbox.consume({ id, body: { n: 1 }, deliveryCount: 2 }, handler(false))).toMatchObject({ status: 'processed' })
      expect(await inbox.consume({ id, body: { n: 1 }, deliveryCount: 3 }, handler(false))).toEqual({ status: 'duplicate', key: id })
      expect(runs).toBe(2)
      expect(await count(id)).toBe(1)
    })

    it('memo: the step\'s transaction dies while fn runs: StoreUnavailableError, and the next call computes and stores it once', async () => {
      // fn gets no transaction: the test finds memo's connection by its pool's name, and
      // the timeout is the pool's connection setting.
      const name = unique('memo')
      const memoPool = poolFor(name, { max: 1, ...(death === 'idle_in_transaction_session_timeout' ? { idleInTransactionMs: 200 } : {}) })
      const memo = createMemo({ store: postgresStore({ pool: memoPool, schema }) })
      const input = { text: unique('intake') }
      let calls = 0
      const fn = (dies: boolean) => async () => {
        calls++
        if (dies) {
          let pid: number | undefined
          await until('memo to hold its transaction', async () => {
            const { rows } = await admin.query(`SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND state = 'idle in transaction'`, [name])
            return (pid = (rows[0] as { pid: number } | undefined)?.pid) !== undefined
          })
          if (death === 'pg_terminate_backend') await admin.query('SELECT pg_terminate_backend($1, 10000)', [pid])
          // An LLM call taking its time, say, while the server ends the idle session.
          await backendGone(admin, pid!)
        }
        return { summary: `call ${calls}` }
      }
      await expect(memo('summarise', input, fn(true))).rejects.toBeInstanceOf(StoreUnavailableError)
      expect(await memo('summarise', input, fn(false))).toEqual({ summary: 'call 2' })
      expect(await memo('summarise', input, fn(false))).toEqual({ summary: 'call 2' })
      expect(calls).toBe(2)
      const stored = await admin.query(`SELECT count(*)::int AS n FROM "${schema}".idem_keys WHERE scope = 'memo:summarise@1' AND key = $1`, [fingerprintValue(input)])
      expect(stored.rows[0].n).toBe(1)
    })
  })

  it('other calls in flight on the same pool carry on, and the dead client is destroyed, not reused', async () => {
    const small = poolFor('idem-connloss-small', { max: 2 })
    const idem = createIdem({ store: postgresStore({ pool: small, schema }) })
    let letGo!: () => void
    const gate = new Promise<void>((resolve) => (letGo = resolve))
    let entered!: () => void
    const inside = new Promise<void>((resolve) => (entered = resolve))
    const survivor = unique('survivor')
    const other = idem.run({ scope: 'connloss', key: survivor, input: 1 }, async (tx) => {
      await insert(tx, survivor)
      entered()
      await gate
      return 'carried on'
    })
    await inside

    const key = unique('k')
    let dead = 0
    await expect(
      idem.run({ scope: 'connloss', key, input: 1 }, async (tx) => {
        await insert(tx, key)
        dead = await deaths.pg_terminate_backend!(tx)
        return 'never stored'
      }),
    ).rejects.toBeInstanceOf(StoreUnavailableError)
    // The dead one is gone from the pool; the survivor still holds its own.
    expect(small.totalCount).toBe(1)
    letGo()
    expect(await other).toEqual({ value: 'carried on', replayed: false, stored: true })
    expect(await count(survivor)).toBe(1)

    // Every client the pool hands out now is on a live backend, never the dead one.
    const next = await idem.run({ scope: 'connloss', key, input: 1 }, async (tx) => backendPid(tx))
    expect(next.value).not.toBe(dead)
    expect(small.totalCount).toBeLessThanOrEqual(2)
    expect(small.idleCount).toBe(small.totalCount)
  })

  it('a backend ended the moment its connection is handed over (ready and terminated in one read) fails that call, not the process', async () => {
    // The chaos suite's service died of this: pg-pool stops listening as it hands a new
    // client over, and a promise resumes its caller a tick later, after the FATAL.
    const proxy = await handoverDeathProxy(admin)
    const handover = storePool('idem-connloss-handover', { max: 1, via: proxy })
    try {
      const idem = createIdem({ store: postgresStore({ pool: handover, schema }) })
      const key = unique('k')
      let ran = 0
      const call = () =>
        idem.run({ scope: 'connloss', key, input: 1 }, async (tx) => {
          ran++
          await insert(tx, key)
          return 'stored'
        })
      await expect(call()).rejects.toBeInstanceOf(StoreUnavailableError)
      expect(proxy.terminated).toHaveLength(1)
      expect(ran).toBe(0)
      // The dead client was destroyed; the retry gets a live one and runs once.
      expect(await call()).toEqual({ value: 'stored', replayed: false, stored: true })
      expect(await call()).toEqual({ value: 'stored', replayed: true, stored: true })
      expect({ ran, rows: await count(key) }).toEqual({ ran: 1, rows: 1 })
      // idem heard the death; the pool never had to.
      expect(handover.errors).toEqual([])
    } finally {
      await handover.end()
      await proxy.close()
    }
  })

  it('prune and migrate work on the pool after a connection died under a call', async () => {
    const idem = createIdem({ store })
    const key = unique('k')
    await expect(idem.run({ scope: 'connloss', key, input: 1 }, (tx) => deaths.pg_terminate_backend!(tx))).rejects.toBeInstanceOf(StoreUnavailableError)
    await expect(store.prune()).resolves.toBeTypeOf('number')
    await expect(store.migrate()).resolves.toMatchObject({ applied: [] })
  })

  describe('in a process of its own (an unhandled error event would kill it)', () => {
    const fixture = fileURLToPath(new URL('../fixtures/connection-lost.mjs', import.meta.url))

    it.each(['terminate', 'idle-timeout'])('%s: the process survives, the call fails with StoreUnavailableError, the retry commits once, and it exits normally', async (death) => {
      const key = unique('child')
      const child = spawn(process.execPath, [fixture, JSON.stringify({ pgUrl: PG_URL, schema, key, death })], { stdio: ['ignore', 'pipe', 'pipe'] })
      let stdout = ''
      let stderr = ''
      child.stdout.on('data', (chunk) => (stdout += chunk))
      child.stderr.on('data', (chunk) => (stderr += chunk))
      const exit = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
        child.on('exit', (code, signal) => resolve({ code, signal })),
      )
      expect(stderr).not.toContain("Unhandled 'error' event")
      // The fixture's pool has no 'error' listener on purpose, so the store says so once
      // (for idle connections); nothing else may reach stderr.
      const [warning, ...rest] = stderr.trim().split('\n')
      expect(warning).toMatch(/^idem postgresStore: the pg\.Pool has no 'error' listener/)
      expect({ ...exit, rest }).toEqual({ code: 0, signal: null, rest: [] })
      const lines = stdout.trim().split('\n')
      expect(lines).toEqual([
        'FIRST {"name":"StoreUnavailableError","code":"store-unavailable"}',
        `RETRY {"value":{"ok":"${key}"},"replayed":false,"stored":true}`,
        `AGAIN {"value":{"ok":"${key}"},"replayed":true,"stored":true}`,
        'DONE',
      ])
      expect(await count(key)).toBe(1)
    })
  })
})
