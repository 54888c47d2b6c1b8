// Every duration option of every entry point is checked at construction against one
// bound (2^31 - 1 ms), with an error naming the option. Before this check, `wait: 3e9`
// was accepted and then broke every request on Postgres ("integer out of range", then a
// false "migration-required").
import Database from 'better-sqlite3'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createIdem, createLeasedIdem, InvalidOptionError } from '../../src/index.js'
import { memoryLeasedStore, memoryStore } from '../../src/stores/memory/index.js'
import { createClient } from '../../src/client/index.js'
import { createMemo } from '../../src/data/index.js'
import { idempotency } from '../../src/http/fetch/index.js'
import { createDispatcher, createInbox, createOutbox, startConsumer } from '../../src/queue/index.js'
import { natsSource } from '../../src/queue/nats/index.js'
import { rabbitmqSource } from '../../src/queue/rabbitmq/index.js'
import { redisStreamSource } from '../../src/queue/redis-streams/index.js'
import { postgresStore } from '../../src/stores/postgres/index.js'
import { redisStore } from '../../src/stores/redis/index.js'
import { leasedSqliteStore, sqliteStore } from '../../src/stores/sqlite/index.js'
import { startFaultProxy, startTcpFaultProxy } from '../../src/testing/index.js'
import { MAX_DURATION_MS } from '../../src/core/errors/option-checks.js'
import { testSchema, type TestSchema } from '../support/postgres.js'

const TOO_LONG = 3e9
const fakeRedis = { defineCommand() {}, call: async () => null, duplicate() {} } as never
// A real client that never connects (lazyConnect, and nothing is sent): the store checks the client's shape at creation.
const idleRedis = new Redis({ lazyConnect: true })
afterAll(() => idleRedis.disconnect())
const fakeChannel = { consume: async () => ({ consumerTag: 't' }), cancel: async () => {}, ack() {}, nack() {}, prefetch: async () => {} }
const fakeSource = { name: 'fake', subscribe: async () => ({ close: async () => {} }) }
const fakeConsumer = { consume: async () => ({ [Symbol.asyncIterator]: () => ({ next: async () => ({ done: true, value: undefined }) }) }) }

// [entry point, option, construct with that option set to `value`]
const entries: Array<[string, string, (value: number) => unknown]> = [
  ['createIdem', 'ttlMs', (ttlMs) => createIdem({ store: memoryStore(), ttlMs })],
  ['createIdem', 'waitMs', (waitMs) => createIdem({ store: memoryStore(), waitMs })],
  ['createLeasedIdem', 'leaseMs', (leaseMs) => createLeasedIdem({ store: memoryLeasedStore(), leaseMs, heartbeatMs: 1 })],
  ['createLeasedIdem', 'heartbeatMs', (heartbeatMs) => createLeasedIdem({ store: memoryLeasedStore(), heartbeatMs })],
  ['createLeasedIdem', 'ttlMs', (ttlMs) => createLeasedIdem({ store: memoryLeasedStore(), ttlMs })],
  ['createLeasedIdem', 'waitMs', (waitMs) => createLeasedIdem({ store: memoryLeasedStore(), waitMs })],
  ['idempotency', 'ttlMs', (ttlMs) => idempotency({ store: memoryStore(), scope: () => 's', ttlMs })],
  ['idempotency', 'waitMs', (waitMs) => idempotency({ store: memoryStore(), scope: () => 's', waitMs })],
  ['createInbox', 'retentionMs', (retentionMs) => createInbox({ store: memoryStore(), consumer: 'c', retentionMs })],
  ['createInbox', 'redeliveryHorizonMs', (redeliveryHorizonMs) => createInbox({ store: memoryStore(), consumer: 'c', redeliveryHorizonMs })],
  ['createInbox', 'waitMs', (waitMs) => createInbox({ store: memoryStore(), consumer: 'c', waitMs })],
  ['createDispatcher', 'leaseMs', (leaseMs) => createDispatcher({ store: sqliteStore({ db: new Database(':memory:') }), deliver: async () => {}, leaseMs })],
  ['createDispatcher', 'pollMs', (pollMs) => createDispatcher({ store: sqliteStore({ db: new Database(':memory:') }), deliver: async () => {}, pollMs })],
  ['createDispatcher', 'backoff.maxMs', (maxMs) => createDispatcher({ store: sqliteStore({ db: new Database(':memory:') }), deliver: async () => {}, backoff: { maxMs } })],
  ['createMemo', 'ttlMs', (ttlMs) => createMemo({ store: memoryStore(), ttlMs })],
  ['createMemo', 'waitMs', (waitMs) => createMemo({ store: memoryStore(), waitMs })],
  ['createClient', 'backoff.baseMs', (baseMs) => createClient({ backoff: { baseMs, maxMs: MAX_DURATION_MS } })],
  ['createClient', 'backoff.maxMs', (maxMs) => createClient({ backoff: { maxMs } })],
  ['createClient', 'attemptTimeoutMs', (attemptTimeoutMs) => createClient({ attemptTimeoutMs })],
  ['createClient', 'deadlineMs', (deadlineMs) => createClient({ deadlineMs })],
  ['sqliteStore', 'busyTimeoutMs', (busyTimeoutMs) => sqliteStore({ db: new Database(':memory:'), busyTimeoutMs })],
  ['leasedSqliteStore', 'busyTimeoutMs', (busyTimeoutMs) => leasedSqliteStore({ db: new Database(':memory:'), busyTimeoutMs })],
  ['redisStore', 'timeoutMs', (timeoutMs) => redisStore({ client: idleRedis, timeoutMs })],
  ['rabbitmqSource', 'maxNackDelayMs', (maxNackDelayMs) => rabbitmqSource({ channel: fakeChannel, queue: 'q', maxNackDelayMs })],
  ['natsSource', 'ackTimeoutMs', (ackTimeoutMs) => natsSource({ consumer: fakeConsumer as never, ackTimeoutMs })],
  ['natsSource', 'redeliveryHorizonMs', (redeliveryHorizonMs) => natsSource({ consumer: fakeConsumer as never, redeliveryHorizonMs })],
  ['redisStreamSource', 'blockMs', (blockMs) => redisStreamSource({ redis: fakeRedis, stream: 's', group: 'g', consumer: 'c', blockMs })],
  ['redisStreamSource', 'claimIdleMs', (claimIdleMs) => redisStreamSource({ redis: fakeRedis, stream: 's', group: 'g', consumer: 'c', claimIdleMs })],
  ['redisStreamSource', 'claimEveryMs', (claimEveryMs) => redisStreamSource({ redis: fakeRedis, stream: 's', group: 'g', consumer: 'c', claimEveryMs })],
]

describe('duration options', () => {
  it.each(entries)('%s refuses %s over 2^31 - 1 ms, naming the option', (entry, option, make) => {
    expect(() => make(TOO_LONG)).toThrow(InvalidOptionError)
    expect(() => make(TOO_LONG)).toThrow(`${entry}: option "${option}"`)
    expect(() => make(1.5)).toThrow(InvalidOptionError)
    expect(() => make(-1)).toThrow(InvalidOptionError)
  })

  it.each(entries.filter(([, option]) => option !== 'heartbeatMs'))('%s accepts %s at the bound', (_entry, _option, make) => {
    expect(() => make(MAX_DURATION_MS)).not.toThrow()
  })

  it('startConsumer, outbox.add and the fault proxies check theirs too', async () => {
    const inbox = createInbox({ store: memoryStore(), consumer: 'c' })
    await expect(startConsumer({ inbox, source: fakeSource, handler: () => {}, storeRetryMs: TOO_LONG })).rejects.toThrow('startConsumer: option "storeRetryMs"')
    await expect(startConsumer({ inbox, source: fakeSource, handler: () => {}, retry: { baseMs: TOO_LONG } })).rejects.toThrow('option "retry.baseMs"')
    const db = new Database(':memory:')
    const store = sqliteStore({ db })
    store.migrate()
    db.exec('BEGIN')
    expect(() => createOutbox({ store }).add(db, { topic: 't', payload: 1, dedupeKey: 'k', delayMs: TOO_LONG })).toThrow('outbox.add: "delayMs"')
    db.exec('ROLLBACK')
    await expect(startFaultProxy({ target: 'http://127.0.0.1:9', upstreamTimeoutMs: TOO_LONG })).rejects.toThrow('startFaultProxy: option "upstreamTimeoutMs"')
    await expect(startTcpFaultProxy({ target: '127.0.0.1:9', connectTimeoutMs: TOO_LONG })).rejects.toThrow('startTcpFaultProxy: option "connectTimeoutMs"')
  })

  it('a call refuses a per-call ttlMs or waitMs over the bound before touching the store', async () => {
    const idem = createIdem({ store: memoryStore() })
    await expect(idem.run({ scope: 's', key: 'k', input: 1, waitMs: TOO_LONG }, () => 1)).rejects.toThrow('run: option "waitMs"')
    await expect(idem.run({ scope: 's', key: 'k', input: 1, ttlMs: TOO_LONG }, () => 1)).rejects.toThrow('run: option "ttlMs"')
  })
})

describe('on Postgres', () => {
  let db: TestSchema | undefined
  beforeAll(async () => {
    db = await testSchema('durations', 2)
    if (db !== undefined) await postgresStore({ pool: db.pool, schema: db.schema }).migrate()
  })
  afterAll(async () => db?.drop())

  it('the longest wait accepted reaches the lock timeout intact, and the next call still works', async (ctx) => {
    if (db === undefined) return ctx.skip()
    const idem = createIdem({ store: postgresStore({ pool: db.pool, schema: db.schema }), waitMs: MAX_DURATION_MS })
    const first = await idem.run({ scope: 's', key: 'longest-wait', input: 1 }, () => 'ran')
    const again = await idem.run({ scope: 's', key: 'longest-wait', input: 1 }, () => 'ran twice')
    expect([first.value, again.value, again.replayed]).toEqual(['ran', 'ran', true])
    const protect = idempotency({ store: postgresStore({ pool: db.pool, schema: db.schema }), scope: () => 's', waitMs: MAX_DURATION_MS })
    const request = () => new Request('http://localhost/orders', { method: 'POST', headers: { 'idempotency-key': 'http-longest' }, body: '{}' })
    const answers = [await protect(request(), async () => new Response('ok', { status: 201 })), await protect(request(), async () => new Response('no', { status: 201 }))]
    expect(answers.map((r) => r.status)).toEqual([201, 201])
    expect(await answers[1]!.text()).toBe('ok')
  })
})
