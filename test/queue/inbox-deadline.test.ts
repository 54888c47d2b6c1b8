// A message handler that never settles must not hold its message, and its Postgres
// transaction, forever: at the inbox's `deadlineMs` the transaction is rolled back (its
// connection leaves pg_stat_activity's "idle in transaction"), the attempt counts as
// failed, a redelivery runs, and a write the handler makes afterwards is refused.
import Database from 'better-sqlite3'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createEventStream, type IdemEvent } from '../../src/core/events.js'
import { createInbox } from '../../src/queue/index.js'
import { memoryStore, type MemoryTx } from '../../src/stores/memory/index.js'
import { postgresStore, type PgClient } from '../../src/stores/postgres/index.js'
import { sqliteStore, type SqliteDatabase } from '../../src/stores/sqlite/index.js'
import { PG_URL, testSchema, type TestSchema } from '../support/postgres.js'
import { latch } from '../http/support/app.js'
import { unique } from './support.js'

const DEADLINE_MS = 300
const db = await testSchema('idem_q_deadline')

describe.skipIf(db === undefined)('an inbox handler past deadlineMs on Postgres', () => {
  const { pool, schema } = db as TestSchema
  // The store's own pool, named so that its connections can be found in pg_stat_activity.
  const appPool = new pg.Pool({ connectionString: PG_URL, application_name: schema, max: 3, connectionTimeoutMillis: 10_000 })
  appPool.on('error', () => {})
  const store = postgresStore({ pool: appPool, schema })
  const effects = `"${schema}".effects`
  beforeAll(async () => {
    await store.migrate()
    await pool.query(`CREATE TABLE ${effects} (message_id text NOT NULL, note text NOT NULL)`)
  })
  afterAll(async () => {
    await pool.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [schema])
    await appPool.end()
    await db?.drop()
  })
  const busyConnections = async (): Promise<string[]> => {
    const { rows } = await pool.query(
      "SELECT state || ': ' || left(query, 40) AS line FROM pg_stat_activity WHERE application_name = $1 AND state IS DISTINCT FROM 'idle'",
      [schema],
    )
    return rows.map((row: { line: string }) => row.line)
  }
  const notes = async (id: string): Promise<string[]> =>
    (await pool.query(`SELECT note FROM ${effects} WHERE message_id = $1 ORDER BY note`, [id])).rows.map((row: { note: string }) => row.note)

  it('the attempt fails at the deadline, the transaction is gone, the redelivery runs, the late write is refused', async () => {
    const events = createEventStream()
    const seen: IdemEvent[] = []
    events.subscribe((event) => seen.push(event))
    const inbox = createInbox<PgClient>({ store, consumer: unique('c'), waitMs: 0, events, deadlineMs: DEADLINE_MS })
    const id = unique('m')
    const release = latch()
    const handlerDone = latch()
    let late = 'not tried'
    const hung = inbox.consume({ id, body: {}, deliveryCount: 1 }, async (tx) => {
      await tx.query(`INSERT INTO ${effects} (message_id, note) VALUES ($1, 'first')`, [id])
      await release.promise
      late = await tx.query(`INSERT INTO ${effects} (message_id, note) VALUES ($1, 'late')`, [id]).then(
        () => 'accepted',
        () => 'refused',
      )
      handlerDone.open()
    })
    const first = await Promise.race([hung, new Promise((resolve) => setTimeout(resolve, DEADLINE_MS + 4_000, 'still holding'))])
    expect.soft(first).toMatchObject({ status: 'failed', attempts: 1, error: { code: 'overran' } })
    expect.soft(await busyConnections()).toEqual([])
    const redelivered = await inbox.consume({ id, body: {}, deliveryCount: 2 }, async (tx) => {
      await tx.query(`INSERT INTO ${effects} (message_id, note) VALUES ($1, 'redelivery')`, [id])
    })
    expect.soft(redelivered).toMatchObject({ status: 'processed' })
    release.open()
    await handlerDone.promise
    await hung
    expect.soft(late).toBe('refused')
    expect.soft(await notes(id)).toEqual(['redelivery'])
    expect.soft(seen.some((event) => event.type === 'warning' && event.code === 'handler-overran' && event.message.includes(inbox.consumer))).toBe(true)
  })
})

describe('an inbox handler past deadlineMs on the memory store and on SQLite', () => {
  it('memory: the attempt fails at the deadline, the redelivery runs, the late write throws and nothing of it is kept', async () => {
    const store = memoryStore()
    const inbox = createInbox<MemoryTx>({ store, consumer: 'c', waitMs: 0, deadlineMs: 20, events: createEventStream() })
    const release = latch()
    const handlerDone = latch()
    let late: unknown = 'not tried'
    const first = await inbox.consume({ id: 'm1', body: {}, deliveryCount: 1 }, async (tx) => {
      tx.set('effects', 'first', 1)
      await release.promise
      try {
        tx.set('effects', 'late', 1)
      } catch (error) {
        late = error
      }
      handlerDone.open()
    })
    expect(first).toMatchObject({ status: 'failed', attempts: 1, error: { code: 'overran' } })
    expect(await inbox.consume({ id: 'm1', body: {}, deliveryCount: 2 }, async (tx) => tx.set('effects', 'redelivery', 1))).toMatchObject({ status: 'processed' })
    release.open()
    await handlerDone.promise
    expect(late).toBeInstanceOf(RangeError)
    expect([...store.collection('effects').keys()]).toEqual(['redelivery'])
  })

  it('SQLite: the transaction cannot be ended under the handler, so it is kept until the handler ends, with an overran-held warning', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'idem-inbox-deadline-'))
    const db = new Database(join(dir, 'inbox.db'))
    try {
      const store = sqliteStore({ db })
      store.migrate()
      db.exec('CREATE TABLE effects (id TEXT NOT NULL)')
      const events = createEventStream()
      const warned = latch()
      events.subscribe((event) => {
        if (event.type === 'warning' && event.code === 'overran-held' && event.message.includes('"m1"')) warned.open()
      })
      const inbox = createInbox<SqliteDatabase>({ store, consumer: 'c', waitMs: 0, deadlineMs: 20, events })
      const release = latch()
      const first = inbox.consume({ id: 'm1', body: {}, deliveryCount: 1 }, async (tx) => {
        tx.prepare("INSERT INTO effects (id) VALUES ('first')").run()
        await release.promise
        tx.prepare("INSERT INTO effects (id) VALUES ('late')").run()
      })
      await warned.promise
      release.open()
      expect(await first).toMatchObject({ status: 'processed' })
      expect(db.prepare('SELECT id FROM effects ORDER BY id').all()).toEqual([{ id: 'first' }, { id: 'late' }])
    } finally {
      db.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
