import Database from 'better-sqlite3'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { createIdem, InvalidOptionError, MigrationRequiredError, StoreUnavailableError } from '../../src/index.js'
import { memoryStore } from '../../src/stores/memory/index.js'
import { createInbox, handleDelivery, listDeadLetters, messageKey, type ConsumedMessage, type Delivery } from '../../src/queue/index.js'
import { migrations, postgresStore } from '../../src/stores/postgres/index.js'
import type { PgClient } from '../../src/stores/postgres/driver/types.js'
import { sqliteStore, type SqliteDatabase } from '../../src/stores/sqlite/index.js'
import { testSchema, type TestSchema } from '../support/postgres.js'
import { unique } from './support.js'

const db = await testSchema('idem_q_inbox')
afterAll(() => db?.drop())

describe.skipIf(db === undefined)('inbox on Postgres', () => {
  const { pool, schema } = db as TestSchema
  const effects = `"${schema}".effects`
  const store = postgresStore({ pool, schema })
  beforeAll(async () => {
    await store.migrate()
    await pool.query(`CREATE TABLE ${effects} (message_id text NOT NULL, note text)`)
  })
  const count = async (id: string) => (await pool.query(`SELECT count(*)::int AS n FROM ${effects} WHERE message_id = $1`, [id])).rows[0].n as number
  const write = (id: string) => async (tx: PgClient) => {
    await tx.query(`INSERT INTO ${effects} (message_id) VALUES ($1)`, [id])
    return { wrote: id }
  }

  it('runs the handler once per message id; a redelivery (the ack was lost) is a duplicate', async () => {
    const inbox = createInbox<PgClient>({ store, consumer: unique('c') })
    const id = unique('m')
    const first = await inbox.consume({ id, body: { n: 1 } }, write(id))
    expect(first).toEqual({ status: 'processed', key: id, value: { wrote: id } })
    const again = await inbox.consume({ id, body: { n: 1 }, redelivered: true }, write(id))
    expect(again).toEqual({ status: 'duplicate', key: id })
    expect(await count(id)).toBe(1)
    // The id is one narrow row of the inbox's own table, and nothing in idem_keys.
    const { rows } = await pool.query(`SELECT consumer, expires_at > now() + interval '13 days' AS kept FROM "${schema}".idem_inbox WHERE message_key = $1`, [id])
    expect(rows).toEqual([{ consumer: inbox.consumer, kept: true }])
    expect((await pool.query(`SELECT count(*)::int AS n FROM "${schema}".idem_keys WHERE key = $1`, [id])).rows[0].n).toBe(0)
  })

  it('upgrading from schema version 4 moves processed ids out of idem_keys: a redelivery after the upgrade is still a duplicate', async () => {
    // A schema as version 4 left it, with ids the inbox recorded then (scope inbox:<consumer>).
    const old = `${schema}_v4`
    await pool.query(`CREATE SCHEMA "${old}"; CREATE TABLE "${old}".idem_migrations (version integer PRIMARY KEY, description text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`)
    for (const migration of migrations.filter((m) => m.version <= 4)) {
      for (const statement of migration.up(old)) await pool.query(statement)
      await pool.query(`INSERT INTO "${old}".idem_migrations (version, description) VALUES ($1, $2)`, [migration.version, migration.description])
    }
    const keys = `"${old}".idem_keys (scope, key, fingerprint, outcome, expires_at)`
    await pool.query(`INSERT INTO ${keys} VALUES ('inbox:billing', 'done-1', 'idem-inbox-v1', '{"processed":true}', now() + interval '14 days')`)
    await pool.query(`INSERT INTO ${keys} VALUES ('inbox:billing', 'expired-1', 'idem-inbox-v1', '{"processed":true}', now() - interval '1 second')`)
    await pool.query(`INSERT INTO ${keys} VALUES ('inbox-failures:billing', 'done-1', 'idem-inbox-v1', 'null', now() + interval '1 day')`)
    await pool.query(`INSERT INTO ${keys} VALUES ('acct_1', 'order-1', 'fp', '{"status":201}', now() + interval '1 day')`)

    const upgraded = postgresStore({ pool, schema: old })
    // Not yet migrated: the inbox says so, and runs nothing.
    const early = createInbox<PgClient>({ store: upgraded, consumer: 'billing' })
    await expect(early.consume({ id: 'done-1', body: 1, redelivered: true }, () => expect.fail('ran before the migration'))).rejects.toThrow(MigrationRequiredError)
    expect(await upgraded.migrate()).toMatchObject({ from: 4, applied: expect.arrayContaining([5]) })
    const moved = await pool.query(`SELECT consumer, message_key, expires_at > now() + interval '13 days' AS kept FROM "${old}".idem_inbox`)
    expect(moved.rows).toEqual([{ consumer: 'billing', message_key: 'done-1', kept: true }])
    const left = await pool.query(`SELECT scope, key FROM "${old}".idem_keys ORDER BY scope`)
    expect(left.rows).toEqual([{ scope: 'acct_1', key: 'order-1' }, { scope: 'inbox-failures:billing', key: 'done-1' }])

    const inbox = createInbox<PgClient>({ store: upgraded, consumer: 'billing' })
    let runs = 0
    expect(await inbox.consume({ id: 'done-1', body: 1, redelivered: true }, () => runs++)).toEqual({ status: 'duplicate', key: 'done-1' })
    expect((await inbox.consume({ id: 'expired-1', body: 1, redelivered: true }, () => runs++)).status).toBe('processed')
    expect(runs).toBe(1)
    await pool.query(`DROP SCHEMA "${old}" CASCADE`)
  })

  it('consumers are separate: the same id is new to another consumer', async () => {
    const id = unique('m')
    const a = createInbox<PgClient>({ store, consumer: unique('a') })
    const b = createInbox<PgClient>({ store, consumer: unique('b') })
    expect((await a.consume({ id, body: 1 }, write(id))).status).toBe('processed')
    expect((await b.consume({ id, body: 1 }, write(id))).status).toBe('processed')
    expect(await count(id)).toBe(2)
  })

  it('concurrent deliveries of one message run the handler once; the other waits and is a duplicate', async () => {
    const inbox = createInbox<PgClient>({ store, consumer: unique('c') })
    const id = unique('m')
    let runs = 0
    const slow = async (tx: PgClient) => {
      runs++
      await write(id)(tx)
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    const results = await Promise.all([1, 2, 3].map(() => inbox.consume({ id, body: 1 }, slow)))
    expect(results.map((r) => r.status).sort()).toEqual(['duplicate', 'duplicate', 'processed'])
    expect(runs).toBe(1)
    expect(await count(id)).toBe(1)
  })

  it('a failing handler rolls back its writes, counts the attempt, and a later success clears the count', async () => {
    const inbox = createInbox<PgClient>({ store, consumer: unique('c') })
    const id = unique('m')
    const failing = async (tx: PgClient) => {
      await write(id)(tx)
      throw new Error('downstream timeout')
    }
    const failed = await inbox.consume({ id, body: 1, deliveryCount: 1 }, failing)
    expect(failed).toMatchObject({ status: 'failed', attempts: 1 })
    expect((failed as { error: Error }).error.message).toBe('downstream timeout')
    expect(await count(id)).toBe(0)
    expect((await inbox.consume({ id, body: 1, deliveryCount: 2 }, failing)).status).toBe('failed')
    const attempts = async () =>
      (await pool.query(`SELECT attempts FROM "${schema}".idem_inbox_attempts WHERE consumer = $1 AND message_key = $2`, [inbox.consumer, id])).rows
    expect(await attempts()).toEqual([{ attempts: 2 }])
    expect((await inbox.consume({ id, body: 1, deliveryCount: 3 }, write(id))).status).toBe('processed')
    expect(await count(id)).toBe(1)
    expect(await attempts()).toEqual([])
  })

  it('a poison message is dead-lettered after maxAttempts with its last error; redeliveries of it are duplicates; others go on', async () => {
    const inbox = createInbox<PgClient>({ store, consumer: unique('poison'), maxAttempts: 3 })
    const poison = unique('poison')
    const body = { claimId: 42, form: '%%garbage%%' }
    const statuses: string[] = []
    for (let delivery = 1; delivery <= 3; delivery++) {
      const result = await inbox.consume({ id: poison, body, deliveryCount: delivery }, () => {
        throw new TypeError(`cannot parse form (delivery ${delivery})`)
      })
      statuses.push(result.status)
    }
    expect(statuses).toEqual(['failed', 'failed', 'dead-lettered'])
    expect((await inbox.consume({ id: poison, body, deliveryCount: 4 }, write(poison))).status).toBe('duplicate')
    const letters = await listDeadLetters(store, { source: 'inbox', name: inbox.consumer })
    expect(letters).toHaveLength(1)
    expect(letters[0]).toMatchObject({ messageKey: poison, attempts: 3, payload: body })
    expect(letters[0]!.lastError).toBe('TypeError: cannot parse form (delivery 3)')
    const next = unique('m')
    expect((await inbox.consume({ id: next, body: 1 }, write(next))).status).toBe('processed')
    expect(await count(poison)).toBe(0)
  })

  it('a message that crashes the process every time (no failure recorded) is dead-lettered by the broker delivery count', async () => {
    const inbox = createInbox<PgClient>({ store, consumer: unique('crashy'), maxAttempts: 2, maxDeliveries: 4 })
    const id = unique('m')
    let runs = 0
    const result = await inbox.consume({ id, body: 'boom', deliveryCount: 5 }, () => void runs++)
    expect(result).toMatchObject({ status: 'dead-lettered', attempts: 4 })
    expect(runs).toBe(0)
    const [letter] = await listDeadLetters(store, { source: 'inbox', name: inbox.consumer })
    expect(letter!.lastError).toMatch(/delivered 4 times without finishing/)
  })

  it('keys ids that are not 1–255 visible ASCII by their SHA-256, and still dedupes them', async () => {
    const inbox = createInbox<PgClient>({ store, consumer: unique('c') })
    const long = `urn:message:${'x'.repeat(400)}`
    const unicode = 'nachricht-über-schäden'
    for (const id of [long, unicode]) {
      const key = messageKey(id)
      expect(key).toMatch(/^sha256:[0-9a-f]{64}$/)
      // The handler is told the key its message is recorded under.
      const keys: string[] = []
      const handler = (tx: PgClient, _message: unknown, recordedAs: string) => (keys.push(recordedAs), write(key)(tx))
      expect((await inbox.consume({ id, body: 1 }, handler)).status).toBe('processed')
      expect(keys).toEqual([key])
      expect(await inbox.consume({ id, body: 1 }, write(key))).toEqual({ status: 'duplicate', key })
    }
    expect(messageKey('evt_123')).toBe('evt_123')
  })

  it('derives the id from the content with idOf (a producer that resends with new broker ids)', async () => {
    const inbox = createInbox<PgClient, { orderId: string; event: string }>({
      store,
      consumer: unique('c'),
      idOf: (m) => `${m.body.orderId}:${m.body.event}`,
    })
    const orderId = unique('o')
    expect((await inbox.consume({ id: 'broker-1', body: { orderId, event: 'paid' } }, write(orderId))).status).toBe('processed')
    expect((await inbox.consume({ id: 'broker-2', body: { orderId, event: 'paid' } }, write(orderId))).status).toBe('duplicate')
    expect(await count(orderId)).toBe(1)
  })

  it('dead-letters a message without an id (it could never be deduplicated)', async () => {
    const inbox = createInbox<PgClient>({ store, consumer: unique('noid') })
    let runs = 0
    const result = await inbox.consume({ body: { orphan: true } }, () => void runs++)
    expect(result.status).toBe('dead-lettered')
    expect(runs).toBe(0)
    const [letter] = await listDeadLetters(store, { source: 'inbox', name: inbox.consumer })
    expect(letter!.lastError).toMatch(/MissingKeyError: .*has no id/)
  })

  it('warns once when retention is shorter than the broker redelivery horizon (console.warn by default)', () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {})
    try {
      const inbox = createInbox({ store, consumer: 'short', retentionMs: 60_000, redeliveryHorizonMs: 4 * 24 * 3600_000 })
      inbox.expectRedeliveryWithin(4 * 24 * 3600_000, 'sqs:claims')
      expect(warn).toHaveBeenCalledTimes(1)
      expect(warn.mock.calls[0]![0]).toMatch(/retentionMs \(60000 ms\) is shorter/)
      const quiet = createInbox({ store, consumer: 'long', redeliveryHorizonMs: 14 * 24 * 3600_000 })
      quiet.expectRedeliveryWithin(14 * 24 * 3600_000)
      expect(warn).toHaveBeenCalledTimes(1)
    } finally {
      warn.mockRestore()
    }
  })

  it('reports a store failure as an error (nothing counted), so the caller redelivers', async () => {
    const broken = postgresStore({ pool: { connect: () => Promise.reject(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })) }, schema })
    const inbox = createInbox<PgClient>({ store: broken, consumer: unique('c') })
    await expect(inbox.consume({ id: 'x', body: 1 }, () => 1)).rejects.toBeInstanceOf(StoreUnavailableError)
  })

  it('validates its options at creation, naming the option', () => {
    const bad: [object, RegExp][] = [
      [{ store, consumer: '' }, /"consumer"/],
      [{ store, consumer: 'c', retentionMs: 0 }, /"retentionMs"/],
      [{ store, consumer: 'c', maxAttempts: 0 }, /"maxAttempts"/],
      [{ store, consumer: 'c', maxAttempts: 5, maxDeliveries: 2 }, /"maxDeliveries"/],
      [{ store, consumer: 'c', idOf: 'id' }, /"idOf"/],
      [{ consumer: 'c' }, /pass "store"/],
      [{ store: { name: 'redis', begin: async () => ({}) }, consumer: 'c' }, /postgres, sqlite or memory/],
      [{ store: { name: 'postgres', begin: async () => ({}) }, consumer: 'c' }, /not from postgresStore/],
    ]
    for (const [options, message] of bad) {
      expect(() => createInbox(options as never)).toThrow(InvalidOptionError)
      expect(() => createInbox(options as never)).toThrow(message)
    }
  })
})

describe('inbox on SQLite (a real file) and in memory', () => {
  const dir = mkdtempSync(join(tmpdir(), 'idem-inbox-'))
  const sqlite = new Database(join(dir, 'inbox.db'))
  sqlite.pragma('journal_mode = WAL')
  const store = sqliteStore({ db: sqlite })
  store.migrate()
  sqlite.exec('CREATE TABLE effects (message_id TEXT NOT NULL)')
  afterAll(() => {
    sqlite.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it('SQLite: processed once, duplicate after, poison dead-lettered with its error', async () => {
    const inbox = createInbox({ store, consumer: 'sqlite-worker', maxAttempts: 2 })
    const write = (tx: SqliteDatabase) => void tx.prepare('INSERT INTO effects (message_id) VALUES (?)').run('m1')
    expect((await inbox.consume({ id: 'm1', body: 1 }, write)).status).toBe('processed')
    expect((await inbox.consume({ id: 'm1', body: 1 }, write)).status).toBe('duplicate')
    expect(sqlite.prepare('SELECT count(*) AS n FROM effects').get()).toEqual({ n: 1 })
    const fail = () => {
      throw new Error('bad form')
    }
    expect((await inbox.consume({ id: 'p1', body: { x: 1 }, deliveryCount: 1 }, fail)).status).toBe('failed')
    expect((await inbox.consume({ id: 'p1', body: { x: 1 }, deliveryCount: 2 }, fail)).status).toBe('dead-lettered')
    const letters = await listDeadLetters(store, { source: 'inbox', name: 'sqlite-worker' })
    expect(letters).toMatchObject([{ messageKey: 'p1', attempts: 2, lastError: 'Error: bad form', payload: { x: 1 } }])
  })

  it('memory: the same behaviour, dead letters in a collection', async () => {
    const memory = memoryStore()
    const inbox = createInbox({ store: memory, consumer: 'memory-worker', maxAttempts: 1 })
    expect((await inbox.consume({ id: 'a', body: 1 }, (tx) => tx.set('effects', 'a', 1))).status).toBe('processed')
    expect((await inbox.consume({ id: 'a', body: 1 }, (tx) => tx.set('effects', 'a', 2))).status).toBe('duplicate')
    expect(memory.collection('effects').get('a')).toBe(1)
    const result = await inbox.consume({ id: 'b', body: 'poison' }, () => {
      throw new Error('nope')
    })
    expect(result.status).toBe('dead-lettered')
    expect(await listDeadLetters(memory, { source: 'inbox' })).toMatchObject([{ messageKey: 'b', attempts: 1, lastError: 'Error: nope' }])
  })

  it('handleDelivery gives the handler the decoded message, its inbox key and the delivery, then acks', async () => {
    const inbox = createInbox({ store: memoryStore(), consumer: 'delivery-worker' })
    const id = `evt ${'x'.repeat(300)}` // not a key as it is: recorded by its hash
    const settled: string[] = []
    const delivery: Delivery = {
      id,
      data: new TextEncoder().encode('{"claim":7}'),
      headers: { trace: 't-1' },
      deliveryCount: 1,
      redelivered: false,
      ack: async () => void settled.push('ack'),
      nack: async () => void settled.push('nack'),
      deadLetter: async () => void settled.push('dead-letter'),
    }
    const seen: ConsumedMessage<unknown>[] = []
    const result = await handleDelivery(inbox, delivery, (_tx, message) => void seen.push(message))
    expect(result).toMatchObject({ status: 'processed', key: messageKey(id) })
    expect(seen).toEqual([{ id, body: { claim: 7 }, deliveryCount: 1, redelivered: false, key: messageKey(id), delivery }])
    expect(settled).toEqual(['ack'])
  })
})
