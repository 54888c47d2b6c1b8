import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { createIdem, InFlightError, MigrationRequiredError, StoreUnavailableError } from '../../src/index.js'
import { migrations, postgresStore, type PgClient, type PgPool, type PgPoolClient } from '../../src/stores/postgres/index.js'
import { testSchema, type TestSchema } from '../support/postgres.js'

const db = await testSchema('idem_pg_engine')
afterAll(() => db?.drop())

/** Wraps a pool so every round trip and every statement it carries is recorded. */
function countingPool(pool: pg.Pool) {
  const trips: string[][] = []
  const counted: PgPool = {
    async connect() {
      const client = (await pool.connect()) as unknown as PgPoolClient
      return new Proxy(client, {
        get(target, property, receiver) {
          if (property !== 'query') return Reflect.get(target, property, receiver)
          return async (text: string, values?: unknown[]) => {
            const result = await target.query(text, values)
            trips.push((Array.isArray(result) ? result : [result]).map((r: { command: string }) => r.command))
            return result
          }
        },
      })
    },
  }
  return { pool: counted, trips, reset: () => void trips.splice(0) }
}

describe.skipIf(db === undefined)('postgres engine', () => {
  const { pool, schema } = db as TestSchema
  const effects = `"${schema}".effects`
  beforeAll(async () => {
    await postgresStore({ pool, schema }).migrate()
    await pool.query(`CREATE TABLE ${effects} (id text NOT NULL)`)
  })
  const count = async (id: string): Promise<number> =>
    (await pool.query(`SELECT count(*)::int AS n FROM ${effects} WHERE id = $1`, [id])).rows[0].n
  const inboxRows = async (key: string): Promise<number> =>
    Number((await pool.query(`SELECT count(*) AS n FROM "${schema}".idem_inbox WHERE message_key = $1`, [key])).rows[0].n)
  const keyRows = async (key: string): Promise<number> =>
    (await pool.query(`SELECT count(*)::int AS n FROM "${schema}".idem_keys WHERE key = $1`, [key])).rows[0].n

  it('a fresh call adds one read and one write statement, no commit and no round trip', async () => {
    const counting = countingPool(pool)
    const insert = async (tx: PgClient, id: string): Promise<void> => {
      await tx.query(`INSERT INTO ${effects} (id) VALUES ($1)`, [id])
    }

    // (a) the bare transaction, as a user would write it
    const client = await counting.pool.connect()
    await client.query('BEGIN')
    await insert(client, 'bare')
    await client.query('COMMIT')
    client.release()
    const bare = counting.trips.splice(0)
    expect(bare).toEqual([['BEGIN'], ['INSERT'], ['COMMIT']])

    // (c) the engine owning the transaction. A connection's first call also prepares the
    // claim and the record's INSERT, in the same round trips.
    const idem = createIdem({ store: postgresStore({ pool: counting.pool, schema }) })
    await idem.run({ scope: 's', key: 'count-first', input: 1 }, (tx) => insert(tx, 'count-first'))
    const first = counting.trips.splice(0)
    expect(first.map((trip) => trip.filter((command) => command !== 'PREPARE'))).toEqual([['BEGIN', 'SELECT'], ['INSERT'], ['INSERT', 'COMMIT']])
    await idem.run({ scope: 's', key: 'count-owned', input: 1 }, (tx) => insert(tx, 'count-owned'))
    const owned = counting.trips.splice(0)
    expect(owned).toEqual([['BEGIN', 'SELECT'], ['INSERT'], ['INSERT', 'COMMIT']])
    expect(owned.length).toBe(bare.length) // same round trips
    const statements = (trips: string[][]) => trips.flat()
    const extra = diff(statements(owned), statements(bare))
    expect(extra).toEqual(['INSERT', 'SELECT']) // one write, one read; no COMMIT

    // joined: the caller's own transaction
    const caller = await counting.pool.connect()
    await caller.query('BEGIN')
    await idem.run({ scope: 's', key: 'count-joined', input: 1, tx: caller }, (tx) => insert(tx, 'count-joined'))
    await caller.query('COMMIT')
    caller.release()
    const joined = counting.trips.splice(0)
    expect(joined).toEqual([['BEGIN'], ['SELECT'], ['INSERT'], ['INSERT'], ['COMMIT']])
    expect(diff(statements(joined), statements(bare))).toEqual(['INSERT', 'SELECT'])
    expect(joined.length - bare.length).toBe(2) // the read round trip and the write statement

    // A retry of a key this store recorded: one read, outside any transaction; nothing
    // written, nothing to end.
    const replay = await idem.run({ scope: 's', key: 'count-owned', input: 1 }, (tx) => insert(tx, 'never'))
    expect(replay.replayed).toBe(true)
    expect(counting.trips).toEqual([['SELECT']])
    counting.reset()

    // The same retry reaching another instance (a store that did not record the key)
    // answers after one round trip too (BEGIN with the claim); the ROLLBACK that ends its
    // read-only transaction follows without delaying the answer.
    const elsewhere = createIdem({ store: postgresStore({ pool: counting.pool, schema }) })
    const again = await elsewhere.run({ scope: 's', key: 'count-owned', input: 1 }, (tx) => insert(tx, 'never'))
    expect(again.replayed).toBe(true)
    expect(counting.trips).toEqual([['BEGIN', 'SELECT']])
    await vi.waitFor(() => expect(counting.trips).toEqual([['BEGIN', 'SELECT'], ['ROLLBACK']]))
    expect(await count('never')).toBe(0)
  })

  it('a retry of a key this store recorded is answered by a read alone, and a record that is gone (expired, pruned, deleted) runs again', async () => {
    const counting = countingPool(pool)
    const idem = createIdem({ store: postgresStore({ pool: counting.pool, schema }) })
    let runs = 0
    const call = (key: string, input: unknown, ttlMs?: number) =>
      idem.run({ scope: 'recent', key, input, ...(ttlMs !== undefined && { ttlMs }) }, async (tx) => {
        await tx.query(`INSERT INTO ${effects} (id) VALUES ($1)`, [key])
        return { run: ++runs }
      })
    expect(await call('recent-1', { a: 1 })).toEqual({ value: { run: 1 }, replayed: false, stored: true })
    counting.reset()
    expect(await call('recent-1', { a: 1 })).toEqual({ value: { run: 1 }, replayed: true, stored: true })
    expect(counting.trips.map((trip) => trip.filter((command) => command !== 'PREPARE'))).toEqual([['SELECT']])
    // The read is of the fingerprint too: another request under the key is still refused.
    await expect(call('recent-1', { a: 2 })).rejects.toThrow(/different request/)

    // Deleted by hand (or pruned): the read finds nothing, and the call claims the key as
    // usual and runs, once.
    await pool.query(`DELETE FROM "${schema}".idem_keys WHERE scope = 'recent' AND key = 'recent-1'`)
    counting.reset()
    expect(await call('recent-1', { a: 2 })).toEqual({ value: { run: 2 }, replayed: false, stored: true })
    expect(counting.trips.map((trip) => trip.filter((command) => command !== 'PREPARE'))).toEqual([['SELECT'], ['BEGIN', 'SELECT'], ['INSERT'], ['INSERT', 'COMMIT']])
    expect(await count('recent-1')).toBe(2)

    // Expired: the read skips it, and the call runs as for a new key.
    expect((await call('recent-2', 1, 1)).replayed).toBe(false)
    await new Promise((resolve) => setTimeout(resolve, 10))
    expect(await call('recent-2', 1)).toEqual({ value: { run: 4 }, replayed: false, stored: true })
    expect(await count('recent-2')).toBe(2)

    // Scopes stay apart on this path too.
    await expect(idem.run({ scope: 'recent-other', key: 'recent-2', input: 1 }, () => 'other')).resolves.toEqual({ value: 'other', replayed: false, stored: true })
  })

  it('the inbox writes its id with the claim: the same round trips as the bare transaction, a bare COMMIT', async () => {
    const counting = countingPool(pool)
    const inbox = postgresStore({ pool: counting.pool, schema }).inbox
    const insert = async (tx: PgClient, id: string): Promise<void> => {
      await tx.query(`INSERT INTO ${effects} (id) VALUES ($1)`, [id])
    }
    // One delivery through the inbox table: what the inbox does for a message.
    const deliver = async (table: typeof inbox, key: string, id: string) => {
      const session = await table.begin({ consumer: 'mark', key, waitMs: 5_000, retentionMs: 60_000 })
      if (session.state !== 'new') return { value: null, replayed: true, stored: true }
      await insert(session.tx, id)
      await session.commit()
      return { value: 'done', replayed: false, stored: true }
    }
    const first = await deliver(inbox, 'mark-1', 'mark-1')
    expect(first).toEqual({ value: 'done', replayed: false, stored: true })
    // BEGIN and the id's INSERT (the claim, prepared: EXECUTE reports INSERT) in one round
    // trip; the handler's INSERT; COMMIT alone. (This store's statements not yet on the
    // connection are prepared in the first round trip.)
    expect(counting.trips.splice(0).map((trip) => trip.filter((command) => command !== 'PREPARE'))).toEqual([['BEGIN', 'INSERT'], ['INSERT'], ['COMMIT']])
    expect(await inboxRows('mark-1')).toBe(1)
    // A redelivery: the INSERT claims nothing, and the usual claim finds the record.
    const replay = await deliver(inbox, 'mark-1', 'never')
    expect(replay).toEqual({ value: null, replayed: true, stored: true })
    expect(counting.trips.slice(0, 2)).toEqual([['BEGIN', 'INSERT'], ['SELECT']])
    expect(await count('never')).toBe(0)
    expect(await count('mark-1')).toBe(1)
  })

  it('a connection that lost its prepared statements still runs each call once, then prepares them again', async () => {
    // One connection, so the DEALLOCATE below hits the one the store uses.
    const single = new pg.Pool({ connectionString: (pool as unknown as { options: { connectionString: string } }).options.connectionString, max: 1, connectionTimeoutMillis: 10_000 })
    const counting = countingPool(single)
    const idem = createIdem({ store: postgresStore({ pool: counting.pool, schema }) })
    const once = (key: string) =>
      idem.run({ scope: 'prepared', key, input: 1 }, async (tx) => {
        await tx.query(`INSERT INTO ${effects} (id) VALUES ($1)`, [key])
        return key
      })
    try {
      await once('prepared-1')
      // What a pooler that moves sessions, or DISCARD ALL, does to the statements.
      await single.query('DEALLOCATE ALL')
      counting.reset()
      expect(await once('prepared-2')).toEqual({ value: 'prepared-2', replayed: false, stored: true })
      // The prepared claim failed (not counted: it threw); the call was rolled back and run
      // with plain statements, reading which statements the connection has.
      expect(counting.trips).toEqual([['ROLLBACK', 'BEGIN', 'SELECT', 'SELECT'], ['INSERT'], ['INSERT', 'COMMIT']])
      counting.reset()
      await once('prepared-3')
      expect(counting.trips).toEqual([['BEGIN', 'PREPARE', 'PREPARE', 'PREPARE', 'PREPARE', 'SELECT'], ['INSERT'], ['INSERT', 'COMMIT']])
      counting.reset()
      await once('prepared-4')
      expect(counting.trips).toEqual([['BEGIN', 'SELECT'], ['INSERT'], ['INSERT', 'COMMIT']])
      expect((await once('prepared-2')).replayed).toBe(true)
      for (const key of ['prepared-1', 'prepared-2', 'prepared-3', 'prepared-4']) expect(await count(key)).toBe(1)

      // The same for the inbox's claims (its claim is the prepared INSERT).
      const inbox = postgresStore({ pool: counting.pool, schema }).inbox
      const mark = async (key: string) => {
        const session = await inbox.begin({ consumer: 'prepared', key, waitMs: 5_000, retentionMs: 60_000 })
        if (session.state !== 'new') return { value: null, replayed: true, stored: true }
        await session.tx.query(`INSERT INTO ${effects} (id) VALUES ($1)`, [key])
        await session.commit()
        return { value: key, replayed: false, stored: true }
      }
      // Its statements are prepared on the connection first, as they would be by earlier messages.
      await mark('prepared-warm')
      await single.query('DEALLOCATE ALL')
      counting.reset()
      expect(await mark('prepared-5')).toEqual({ value: 'prepared-5', replayed: false, stored: true })
      expect(counting.trips).toEqual([['ROLLBACK', 'BEGIN', 'INSERT', 'SELECT'], ['INSERT'], ['COMMIT']])
      counting.reset()
      await mark('prepared-6')
      expect(counting.trips).toEqual([['BEGIN', 'PREPARE', 'PREPARE', 'PREPARE', 'INSERT'], ['INSERT'], ['COMMIT']])
      expect((await mark('prepared-5')).replayed).toBe(true)
      for (const key of ['prepared-5', 'prepared-6']) expect(await count(key)).toBe(1)

      // A retry read outside a transaction recovers the same way, with nothing to roll back.
      await single.query('DEALLOCATE ALL')
      counting.reset()
      expect(await once('prepared-3')).toEqual({ value: 'prepared-3', replayed: true, stored: true })
      expect(counting.trips).toEqual([['SELECT', 'SELECT']])
    } finally {
      await single.end()
    }
  })

  it('with preparedStatements off, the claim and the record are plain statements', async () => {
    const counting = countingPool(pool)
    const sent: string[] = []
    const spying: PgPool = {
      async connect() {
        const client = await counting.pool.connect()
        return new Proxy(client, {
          get: (target, property, receiver) =>
            property === 'query' ? (text: string, values?: unknown[]) => (sent.push(text), target.query(text, values)) : Reflect.get(target, property, receiver),
        })
      },
    }
    const idem = createIdem({ store: postgresStore({ pool: spying, schema, preparedStatements: false }) })
    await idem.run({ scope: 'plain', key: 'plain-1', input: 1 }, async () => 'plain')
    expect((await idem.run({ scope: 'plain', key: 'plain-1', input: 1 }, async () => 'never')).value).toBe('plain')
    expect(sent.some((text) => /PREPARE|EXECUTE/.test(text))).toBe(false)
    expect(counting.trips).toEqual([['BEGIN', 'SELECT'], ['INSERT', 'COMMIT'], ['SELECT']])
    expect(() => postgresStore({ pool, schema, preparedStatements: 'yes' as never })).toThrow(/preparedStatements/)
  })

  it('joins a transaction the caller opened: its rollback undoes effect and key, its commit keeps both', async () => {
    const idem = createIdem({ store: postgresStore({ pool, schema }) })
    const client = await pool.connect()
    try {
      for (const outcome of ['ROLLBACK', 'COMMIT'] as const) {
        await client.query('BEGIN')
        const result = await idem.run({ scope: 's', key: 'joined', input: 1, tx: client }, async (tx) => {
          await tx.query(`INSERT INTO ${effects} (id) VALUES ('joined')`)
          return outcome
        })
        expect(result).toEqual({ value: outcome, replayed: false, stored: true })
        await client.query(outcome)
      }
    } finally {
      client.release()
    }
    expect(await count('joined')).toBe(1)
    expect(await keyRows('joined')).toBe(1)
    const replay = await idem.run({ scope: 's', key: 'joined', input: 1 }, async () => 'never')
    expect(replay).toEqual({ value: 'COMMIT', replayed: true, stored: true })
  })

  it('a joined duplicate that will not wait gets InFlightError and its transaction stays usable', async () => {
    const idem = createIdem({ store: postgresStore({ pool, schema }) })
    const first = await pool.connect()
    const second = await pool.connect()
    try {
      await first.query('BEGIN')
      await idem.run({ scope: 's', key: 'joined-busy', input: 1, tx: first }, async () => 'first')
      await second.query('BEGIN')
      await expect(idem.run({ scope: 's', key: 'joined-busy', input: 1, tx: second, waitMs: 100 }, async () => 'second')).rejects.toThrow(
        InFlightError,
      )
      // The lock wait timed out inside a subtransaction, so the caller's transaction goes on.
      expect((await second.query('SELECT 1 AS one')).rows[0].one).toBe(1)
      await second.query('ROLLBACK')
      await first.query('COMMIT')
    } finally {
      first.release()
      second.release()
    }
  })

  it('under REPEATABLE READ a waiting duplicate starts over and replays instead of running twice', async () => {
    const idem = createIdem({ store: postgresStore({ pool, schema, isolation: 'repeatable read' }) })
    let runs = 0
    let started!: () => void
    const running = new Promise<void>((resolve) => (started = resolve))
    const first = idem.run({ scope: 's', key: 'rr', input: 1 }, async (tx) => {
      runs++
      await tx.query(`INSERT INTO ${effects} (id) VALUES ('rr')`)
      started()
      await new Promise((resolve) => setTimeout(resolve, 200))
      return 'first'
    })
    await running
    const second = await idem.run({ scope: 's', key: 'rr', input: 1, waitMs: 5_000 }, async () => {
      runs++
      return 'second'
    })
    expect((await first).value).toBe('first')
    expect(second).toEqual({ value: 'first', replayed: true, stored: true })
    expect(runs).toBe(1)
    expect(await count('rr')).toBe(1)
  })

  it('a missing table is MigrationRequiredError saying how to migrate, and nothing runs', async () => {
    const idem = createIdem({ store: postgresStore({ pool, schema: `${schema}_unmigrated` }) })
    let ran = false
    const call = idem.run({ scope: 's', key: 'k', input: 1 }, async () => {
      ran = true
    })
    await expect(call).rejects.toThrow(MigrationRequiredError)
    await expect(call).rejects.toThrow(/idem migrate .*--schema idem_pg_engine_\w+_unmigrated|store\.migrate\(\)/)
    expect(ran).toBe(false)
  })

  it('a closed pool is StoreUnavailableError', async () => {
    const closed = new pg.Pool({ connectionString: (pool as unknown as { options: { connectionString: string } }).options.connectionString, connectionTimeoutMillis: 2_000 })
    await closed.end()
    const idem = createIdem({ store: postgresStore({ pool: closed, schema }) })
    await expect(idem.run({ scope: 's', key: 'k', input: 1 }, async () => 1)).rejects.toThrow(StoreUnavailableError)
  })

  it('a Postgres that accepts connections and never answers is StoreUnavailableError once the pool\'s connectionTimeoutMillis passes', async () => {
    // A frozen server or a dropped network path: the TCP connection opens, nothing comes back.
    const sockets: import('node:net').Socket[] = []
    const { createServer } = await import('node:net')
    const hole = createServer((socket) => void sockets.push(socket)).listen(0, '127.0.0.1')
    await new Promise((resolve) => hole.once('listening', resolve))
    const port = (hole.address() as import('node:net').AddressInfo).port
    const silent = new pg.Pool({ host: '127.0.0.1', port, user: 'postgres', database: 'test', connectionTimeoutMillis: 300 })
    try {
      let ran = false
      const idem = createIdem({ store: postgresStore({ pool: silent, schema }) })
      const call = idem.run({ scope: 's', key: 'k', input: 1 }, async () => {
        ran = true
      })
      await expect(call).rejects.toThrow(StoreUnavailableError)
      expect(ran).toBe(false)
    } finally {
      for (const socket of sockets) socket.destroy()
      hole.close()
      await silent.end().catch(() => {})
    }
  })

  it("a statement cut off by pg's query_timeout is StoreUnavailableError, and the call that holds the key is unharmed", async () => {
    const { connectionString } = (pool as unknown as { options: { connectionString: string } }).options
    const impatient = new pg.Pool({ connectionString, connectionTimeoutMillis: 5_000, query_timeout: 300 } as pg.PoolConfig)
    try {
      const idem = createIdem({ store: postgresStore({ pool, schema }) })
      const waiting = createIdem({ store: postgresStore({ pool: impatient, schema }), waitMs: 5_000 })
      let letGo!: () => void
      let started!: () => void
      const inside = new Promise<void>((resolve) => (started = resolve))
      const holder = idem.run({ scope: 's', key: 'held-past-query-timeout', input: 1 }, async () => {
        started()
        await new Promise<void>((resolve) => (letGo = resolve))
        return 'first'
      })
      await inside
      // Its claim waits in Postgres for the key's lock; pg gives up on the answer first.
      await expect(waiting.run({ scope: 's', key: 'held-past-query-timeout', input: 1 }, async () => 'second')).rejects.toThrow(StoreUnavailableError)
      letGo()
      expect(await holder).toMatchObject({ value: 'first', replayed: false })
    } finally {
      await impatient.end()
    }
  })

  it('warns once, naming connectionTimeoutMillis, for a pool that would wait without limit', () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {})
    try {
      const unbounded = new pg.Pool({ connectionString: 'postgres://postgres@127.0.0.1:5432/test' })
      postgresStore({ pool: unbounded, schema })
      postgresStore({ pool: unbounded, schema })
      postgresStore({ pool: new pg.Pool({ connectionString: 'postgres://postgres@127.0.0.1:5432/test', connectionTimeoutMillis: 5_000 }), schema })
      // (The pools also lack an 'error' listener, which is warned about on its own.)
      const timeouts = warn.mock.calls.map(([message]) => String(message)).filter((message) => message.includes('connectionTimeoutMillis'))
      expect(timeouts).toHaveLength(1)
      expect(timeouts[0]).toMatch(/postgresStore: the pg\.Pool has no connectionTimeoutMillis/)
      void unbounded.end()
    } finally {
      warn.mockRestore()
    }
  })

  it('migrates once when two instances start at once, and refuses a newer schema', async () => {
    const target = `${schema}_race`
    const [a, b] = await Promise.all([postgresStore({ pool, schema: target }).migrate(), postgresStore({ pool, schema: target }).migrate()])
    expect([a.applied, b.applied].sort()).toEqual([[], migrations.map((m) => m.version)].sort())
    const again = await postgresStore({ pool, schema: target }).migrate()
    expect(again.applied).toEqual([])
    await pool.query(`INSERT INTO "${target}".idem_migrations (version, description) VALUES (999, 'from the future')`)
    await expect(postgresStore({ pool, schema: target }).migrate()).rejects.toThrow(/version 999, newer than this idem/)
    await pool.query(`DROP SCHEMA "${target}" CASCADE`)
  })
})

/** Multiset difference a − b, sorted. */
function diff(a: string[], b: string[]): string[] {
  const rest = [...a]
  for (const item of b) rest.splice(rest.indexOf(item), 1)
  return rest.sort()
}

describe.skipIf(db === undefined)('postgres pruning', () => {
  it('deletes expired records in bounded batches and keeps live ones', async () => {
    const { pool, schema } = db as TestSchema
    const store = postgresStore({ pool, schema })
    const idem = createIdem({ store })
    for (let i = 0; i < 25; i++) await idem.run({ scope: 'prune', key: `old-${i}`, input: i, ttlMs: 1 }, () => i)
    await idem.run({ scope: 'prune', key: 'live', input: 1 }, () => 'live')
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(await store.prune({ batchSize: 10 })).toBe(25)
    const { rows } = await pool.query(`SELECT key FROM "${schema}".idem_keys WHERE scope = 'prune'`)
    expect(rows).toEqual([{ key: 'live' }])
    await expect(store.prune({ batchSize: 0 })).rejects.toThrow(/option "batchSize"/)
  })
})
