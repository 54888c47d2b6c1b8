// Fuzz of identities: lone surrogates, NUL, U+FFFD and binary ids in every field that
// becomes a stored identity (scope, key, step name, message id, Kafka's idem-id header,
// NATS's Nats-Msg-Id header), on every store and broker. The invariant is the same
// everywhere: two different inputs never become one identity. A string that cannot be
// one is refused by the one rule (src/core/identity.ts: 1–max characters, no NUL,
// well-formed UTF-16), over HTTP as a 400, never a 5xx; a message whose id is refused is
// dead-lettered, never settled as a duplicate of another; binary broker ids are kept as
// their bytes. (Postgres, Redis and DynamoDB store UTF-8, where "\ud800" and "\udc00"
// are both U+FFFD: before the rule, their pairs here were one identity.)
import Database from 'better-sqlite3'
import fc from 'fast-check'
import kafkajs from 'kafkajs'
import { randomUUID } from 'node:crypto'
import { AckPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream'
import { connect } from '@nats-io/transport-node'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createIdem, createLeasedIdem, InvalidKeyError, InvalidOptionError, type KeyStore, type LeasedStore } from '../../src/index.js'
import { idempotency } from '../../src/http/fetch/index.js'
import { createInbox, idFromBytes, startConsumer, type ConsumeResult, type WithInboxTable } from '../../src/queue/index.js'
import { kafkaSource } from '../../src/queue/kafka/index.js'
import { natsSource } from '../../src/queue/nats/index.js'
import { memoryLeasedStore, memoryStore } from '../../src/stores/memory/index.js'
import { leasedPostgresStore, postgresStore } from '../../src/stores/postgres/index.js'
import { redisStore } from '../../src/stores/redis/index.js'
import { leasedSqliteStore, sqliteStore, type SqliteDatabase } from '../../src/stores/sqlite/index.js'
import { testDynamo } from '../support/dynamodb.js'
import { startKafkaMock, type KafkaMock } from '../support/kafka-mock.js'
import { publishRawIds } from '../support/nats-raw.js'
import { testSchema } from '../support/postgres.js'
import { testRedis } from '../leased/support.js'
import { eventually, reach, unique } from '../queue/support.js'
import { report, scale } from './support/table.js'

const PAIRS = scale(40, 1_000)
const HTTP_CASES = scale(300, 10_000)
const MESSAGES = scale(60, 1_000)
const BROKER_IDS = scale(40, 1_000)
const SEED = Number(process.env.IDEM_CHAOS_SEED ?? 20261201)

const pg = await testSchema('idem_chaos_identities')
const redis = await testRedis('chaos-identities')
const dynamo = await testDynamo('chaos_identities')
const NATS_URL = process.env.IDEM_TEST_NATS_URL ?? 'nats://127.0.0.1:4222'
const nats = await reach('NATS JetStream', NATS_URL, async () => {
  const nc = await connect({ servers: NATS_URL, timeout: 3_000, reconnect: false })
  return { nc, jsm: await jetstreamManager(nc) }
})
const kafka = await reach<KafkaMock>('librdkafka mock cluster (kcat)', 'kcat -X test.mock.num.brokers=3', () => startKafkaMock())
const sqliteFile = new Database(':memory:') as unknown as SqliteDatabase
const sqliteLeasedFile = new Database(':memory:') as unknown as SqliteDatabase
const streams: string[] = []

beforeAll(async () => {
  sqliteStore({ db: sqliteFile }).migrate()
  leasedSqliteStore({ db: sqliteLeasedFile }).migrate()
  if (pg) {
    await postgresStore({ pool: pg.pool, schema: pg.schema }).migrate()
    await leasedPostgresStore({ pool: pg.pool, schema: pg.schema }).migrate()
  }
})
afterAll(async () => {
  if (nats) {
    for (const stream of streams) await nats.jsm.streams.delete(stream).catch(() => {})
    await nats.nc.close()
  }
  await Promise.all([pg?.drop(), redis?.drop(), dynamo?.drop(), kafka?.stop()])
})

// Text a careless encoding would fold together: both halves of surrogate pairs alone and
// paired, U+FFFD itself, NUL, separators, and any UTF-16 code unit at all.
const unit = fc.oneof(
  { weight: 12, arbitrary: fc.constantFrom('a', 'b', ':', ' ', '@', '\ufffd', '\ud83d\ude00') },
  { weight: 2, arbitrary: fc.constantFrom('\ud800', '\udbff', '\udc00', '\udfff') },
  { weight: 1, arbitrary: fc.constant('\0') },
  { weight: 1, arbitrary: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)) },
)
const text = (maxLength: number) => fc.string({ unit, maxLength })

/** The rule, as the tests expect it to hold (src/core/identity.ts). */
const refusedIdentity = (s: string, max: number) => s.length === 0 || s.length > max || s.includes('\0') || !s.isWellFormed()
const refusedKey = (k: string) => !/^[\x21-\x7e]{1,255}$/.test(k)

type Run = (options: { scope: string; key: string; input: unknown }, fn: (ctx: never) => unknown) => Promise<{ value: unknown; replayed: boolean }>
const engines: Array<[string, Run, boolean]> = []
const add = (name: string, run: Run, leased: boolean) => engines.push([name, run, leased])
add('memory', createIdem({ store: memoryStore() as KeyStore<unknown> }).run as unknown as Run, false)
add('memory leased', createLeasedIdem({ store: memoryLeasedStore() }).run as unknown as Run, true)
add('sqlite', createIdem({ store: sqliteStore({ db: sqliteFile }) as KeyStore<unknown> }).run as unknown as Run, false)
add('sqlite leased', createLeasedIdem({ store: leasedSqliteStore({ db: sqliteLeasedFile }) }).run as unknown as Run, true)
if (pg) {
  add('postgres', createIdem({ store: postgresStore({ pool: pg.pool, schema: pg.schema }) as KeyStore<unknown> }).run as unknown as Run, false)
  add('postgres leased', createLeasedIdem({ store: leasedPostgresStore({ pool: pg.pool, schema: pg.schema }) }).run as unknown as Run, true)
}
if (redis) add('redis', createLeasedIdem({ store: redisStore({ client: redis.client, prefix: redis.prefix }) as LeasedStore }).run as unknown as Run, true)
if (dynamo) add('dynamodb', createLeasedIdem({ store: dynamo.store }).run as unknown as Run, true)

describe('fuzz: identities', () => {
  it(`${PAIRS.toLocaleString('en-US')} scope pairs × key × step names on each of ${engines.length} engines: refused by the rule, never one identity for two`, async ({ task }) => {
    let cases = 0
    let collisions = 0
    let refusals = 0
    for (const [name, run, leased] of engines) {
      await fc.assert(
        fc.asyncProperty(text(8), text(8), fc.option(text(6), { nil: undefined, freq: 3 }), text(5), text(5), async (scopeA, scopeB, fuzzedKey, stepA, stepB) => {
          if (scopeA === scopeB) return
          // Unique per run, shrinking included, so no run meets an earlier run's record.
          const key = fuzzedKey === undefined ? randomUUID() : `k${cases}-${fuzzedKey}`
          cases++
          const outcomes: Array<{ value: unknown; replayed: boolean } | undefined> = []
          for (const scope of [scopeA, scopeB]) {
            const refused = refusedIdentity(scope, 1024) || refusedKey(key)
            try {
              outcomes.push(
                await run({ scope, key, input: 1 }, async (ctx: { step(name: string, fn: () => string): Promise<string>; derive(name: string): string }) => {
                  if (leased) await steps(ctx, stepA, stepB)
                  return { owner: scope }
                }),
              )
              expect(refused, `${name}: accepted scope ${JSON.stringify(scope)} / key ${JSON.stringify(key)}`).toBe(false)
            } catch (error) {
              expect(refused, `${name}: ${String(error)}`).toBe(true)
              expect(error).toBeInstanceOf(InvalidKeyError)
              refusals++
              outcomes.push(undefined)
            }
          }
          const [a, b] = outcomes
          if (a !== undefined) expect(a).toEqual({ value: { owner: scopeA }, replayed: false, stored: true })
          if (b !== undefined) {
            if (b.replayed) collisions++
            expect(b, `${name}: ${JSON.stringify(scopeA)} answered ${JSON.stringify(scopeB)}`).toEqual({ value: { owner: scopeB }, replayed: false, stored: true })
          }
        }),
        { numRuns: PAIRS, seed: SEED + 10 },
      )
    }
    report(task, {
      scenario: `fuzz: identities (lone surrogates, NUL, U+FFFD) in scopes, keys, step names on ${engines.length} engines`,
      runs: cases,
      unit: 'pairs',
      duplicates: collisions,
      lost: 0,
      unexpected5xx: 0,
      notes: `${refusals} refused by the one rule; no scope answered another's, no two step names shared a derived key`,
    })
  }, 600_000)

  it(`${HTTP_CASES.toLocaleString('en-US')} principals with lone surrogates over HTTP: a 400 problem or the tenant's own answer, never a 5xx`, async ({ task }) => {
    const db = new Database(':memory:') as unknown as SqliteDatabase
    const store = sqliteStore({ db })
    store.migrate()
    // The principal arrives as a token's JSON claim, \u-escaped to fit a header (spaces too: a header value is trimmed).
    const protect = idempotency({ idem: createIdem({ store }), scope: (request) => JSON.parse(`"${request.headers.get('x-claim') ?? ''}"`) as string })
    const claimHeader = (scope: string) => [...scope].map((c) => (/^[\x21-\x7e]$/.test(c) && c !== '"' && c !== '\\' ? c : [...Array(c.length).keys()].map((i) => `\\u${c.charCodeAt(i).toString(16).padStart(4, '0')}`).join(''))).join('')
    const send = (scope: string, key: string) =>
      protect(new Request('http://fuzz.test/orders', { method: 'POST', headers: { 'idempotency-key': `"${key}"`, 'x-claim': claimHeader(scope) }, body: 'same body' }), async () =>
        Response.json({ owner: scope }, { status: 201 }),
      )
    let cases = 0
    let fiveXx = 0
    let collisions = 0
    let refusals = 0
    await fc.assert(
      fc.asyncProperty(text(8), text(8), async (scopeA, scopeB) => {
        if (scopeA === scopeB) return
        cases++
        const key = randomUUID()
        for (const scope of [scopeA, scopeB]) {
          const answer = await send(scope, key)
          if (answer.status >= 500) fiveXx++
          if (refusedIdentity(scope, 1024)) {
            expect(answer.status, JSON.stringify(scope)).toBe(400)
            expect(answer.headers.get('content-type')).toBe('application/problem+json')
            expect(((await answer.json()) as { code: string }).code).toBe('invalid-key')
            refusals++
            continue
          }
          if (answer.headers.get('idempotent-replayed') === 'true') collisions++
          expect(answer.status).toBe(201)
          expect(await answer.json()).toEqual({ owner: scope })
        }
      }),
      { numRuns: HTTP_CASES, seed: SEED + 11 },
    )
    report(task, { scenario: 'fuzz: identities, HTTP principals with lone surrogates', runs: cases, unit: 'pairs', duplicates: collisions, lost: 0, unexpected5xx: fiveXx, notes: `${refusals} refused with 400 invalid-key` })
  }, 600_000)

  const inboxStores: Array<[string, () => WithInboxTable<unknown>]> = [
    ['memory', () => memoryStore() as WithInboxTable<unknown>],
    ['sqlite', () => sqliteStore({ db: sqliteFile }) as WithInboxTable<unknown>],
  ]
  if (pg) inboxStores.push(['postgres', () => postgresStore({ pool: pg.pool, schema: pg.schema }) as WithInboxTable<unknown>])
  if (redis) inboxStores.push(['redis', () => redisStore({ client: redis.client, prefix: redis.prefix }) as unknown as WithInboxTable<unknown>])
  if (dynamo) inboxStores.push(['dynamodb', () => dynamo.store as unknown as WithInboxTable<unknown>])

  it(`${MESSAGES.toLocaleString('en-US')} message ids with lone surrogates on each of ${inboxStores.length} inbox stores: each processed or dead-lettered once, none dropped as another's duplicate`, async ({ task }) => {
    let messages = 0
    let lost = 0
    let refused = 0
    let redelivered = 0
    for (const [name, makeStore] of inboxStores) {
      const ids = fc.sample(fc.uniqueArray(text(6), { minLength: MESSAGES, maxLength: MESSAGES }), { numRuns: 1, seed: SEED + 12 })[0]!
      const inbox = createInbox<unknown, { n: number }>({ store: makeStore(), consumer: unique('fuzz') })
      const ran = new Set<number>()
      const first: ConsumeResult[] = []
      for (const [n, id] of ids.entries()) {
        messages++
        const result = await inbox.consume({ id, body: { n }, deliveryCount: 1 }, () => void ran.add(n))
        first.push(result)
        if (result.status === 'duplicate') lost++
        // An empty id is no id: dead-lettered by content, as before.
        const expected = id.length === 0 || !id.isWellFormed() ? 'dead-lettered' : 'processed'
        expect(result.status, `${name}: ${JSON.stringify(id)}`).toBe(expected)
        if (expected === 'dead-lettered') refused++
      }
      expect(new Set(first.map((r) => r.key)).size, `${name}: one key per id`).toBe(ids.length)
      // Every redelivery finds its own record.
      for (const [n, id] of ids.entries()) {
        const again = await inbox.consume({ id, body: { n }, deliveryCount: 2, redelivered: true }, () => void ran.add(-1))
        expect(again, `${name}: redelivery of ${JSON.stringify(id)}`).toEqual({ status: 'duplicate', key: first[n]!.key })
        redelivered++
      }
      expect(ran.has(-1)).toBe(false)
    }
    report(task, {
      scenario: `fuzz: identities, message ids on ${inboxStores.length} inbox stores`,
      runs: messages,
      unit: 'messages',
      duplicates: 0,
      lost,
      unexpected5xx: 0,
      notes: `${refused} dead-lettered (no id, or not well-formed), each under its own key; ${redelivered} redeliveries found their own record`,
    })
  }, 600_000)

  it.skipIf(kafka === undefined)(`${BROKER_IDS.toLocaleString('en-US')} Kafka idem-id headers of random bytes (librdkafka mock cluster): each record processed once`, async ({ task }) => {
    const { Kafka, logLevel } = kafkajs
    const client = new Kafka({ clientId: 'idem-fuzz', brokers: kafka!.brokers, logLevel: logLevel.NOTHING, retry: { retries: 5, initialRetryTime: 100, maxRetryTime: 1_000 } })
    const crafted = [[0xff, 0x01], [0xfe, 0x01], [...Buffer.from('hex:ff01')], [...Buffer.from('\ufffd\u0001')], [0xef, 0xbb, 0xbf, 0x61], [0x61]]
    const random = fc.sample(fc.uint8Array({ minLength: 1, maxLength: 8 }), { numRuns: BROKER_IDS, seed: SEED + 13 }).map((bytes) => [...bytes])
    const ids = [...new Map([...crafted, ...random].map((bytes) => [Buffer.from(bytes).toString('hex'), Buffer.from(bytes)])).values()]
    const topic = unique('fuzz-ids')
    const producer = client.producer({ idempotent: false })
    await producer.connect()
    await producer.send({ topic, messages: ids.map((id, n) => ({ value: JSON.stringify({ n }), partition: 0, headers: { 'idem-id': id } })) })
    await producer.disconnect()
    const settled = await consumeAll(
      kafkaSource({ kafka: client, groupId: unique('fuzz'), topics: [topic], deadLetterTopic: null, idempotent: false, consumerConfig: { sessionTimeout: 6_000, rebalanceTimeout: 10_000, heartbeatInterval: 500, maxWaitTimeInMs: 200 } }),
      ids.length,
    )
    const lost = settled.filter((s) => s.status !== 'processed').length
    expect(settled.map((s) => s.status)).toEqual(ids.map(() => 'processed'))
    expect(settled.map((s) => s.id)).toEqual(ids.map((id) => idFromBytes(id)))
    report(task, { scenario: 'fuzz: identities, Kafka idem-id headers of random bytes', runs: ids.length, unit: 'records', duplicates: 0, lost, unexpected5xx: 0, notes: 'ids that are not UTF-8 kept as hex:<bytes>, none folded into another' })
  }, 120_000)

  it.skipIf(nats === undefined)(`${BROKER_IDS.toLocaleString('en-US')} NATS Nats-Msg-Id headers of random bytes (raw protocol, as a Go or C producer sends them): each message processed once`, async ({ task }) => {
    // Not CR or LF (they end a header line), and no whitespace at either end: the client
    // trims header values, so ids that differ only there cannot be told apart (docs/queue.md).
    const byte = fc.integer({ min: 0, max: 255 }).filter((b) => b !== 0x0a && b !== 0x0d)
    const edge = byte.filter((b) => !/\s/.test(String.fromCharCode(b)) && b !== 0x85 && b !== 0xa0)
    const random = fc.sample(fc.tuple(edge, fc.array(byte, { maxLength: 6 }), edge), { numRuns: BROKER_IDS, seed: SEED + 14 }).map(([a, middle, z]) => [a, ...middle, z])
    const crafted = [[0xff, 0x01], [0xfe, 0x01], [0x61, 0xff], [0x61, 0xfe]]
    const ids = [...new Map([...crafted, ...random].map((bytes) => [Buffer.from(bytes).toString('hex'), Buffer.from(bytes)])).values()]
    const stream = unique('IDEM_FUZZ_IDS').toUpperCase()
    const subject = `${stream.toLowerCase()}.events`
    streams.push(stream)
    await nats!.jsm.streams.add({ name: stream, subjects: [subject] })
    await nats!.jsm.consumers.add(stream, { durable_name: 'workers', ack_policy: AckPolicy.Explicit, ack_wait: 5_000_000_000 })
    await publishRawIds(NATS_URL, subject, ids)
    expect((await nats!.jsm.streams.info(stream)).state.messages).toBe(ids.length)
    const nc = await connect({ servers: NATS_URL, timeout: 3_000, reconnect: false })
    try {
      const settled = await consumeAll(natsSource({ consumer: await jetstream(nc).consumers.get(stream, 'workers'), name: stream, concurrency: 1 }), ids.length)
      const lost = settled.filter((s) => s.status !== 'processed').length
      expect(settled.map((s) => s.status)).toEqual(ids.map(() => 'processed'))
      expect(new Set(settled.map((s) => s.id)).size).toBe(ids.length)
      report(task, { scenario: 'fuzz: identities, NATS Nats-Msg-Id headers of random bytes', runs: ids.length, unit: 'messages', duplicates: 0, lost, unexpected5xx: 0, notes: 'ids the client reads with U+FFFD replaced by the stream identity, none folded into another' })
    } finally {
      await nc.close()
    }
  }, 120_000)
})

/** Runs a derive and a step for each name: refused by the rule, and distinct names never share a derived key. */
async function steps(ctx: { step(name: string, fn: () => string): Promise<string>; derive(name: string): string }, a: string, b: string): Promise<void> {
  const derived: string[] = []
  for (const name of [a, b]) {
    const refused = refusedIdentity(name, 1024)
    try {
      derived.push(ctx.derive(name))
      expect(await ctx.step(name, () => `output of ${JSON.stringify(name)}`)).toBe(`output of ${JSON.stringify(name)}`)
      expect(refused, `step name ${JSON.stringify(name)} accepted`).toBe(false)
    } catch (error) {
      expect(refused, String(error)).toBe(true)
      expect(error).toBeInstanceOf(InvalidOptionError)
    }
  }
  if (derived.length === 2 && a !== b) expect(derived[0]).not.toBe(derived[1])
}

/** Consumes a source through a memory inbox until `count` deliveries are settled; their statuses and ids, in order. */
async function consumeAll(source: Parameters<typeof startConsumer>[0]['source'], count: number) {
  const inbox = createInbox({ store: memoryStore(), consumer: unique('fuzz') })
  const settled: Array<{ status: string; id: string | undefined }> = []
  const consumer = await startConsumer({ inbox, source, handler: () => undefined, onSettled: (result, delivery) => settled.push({ status: result.status, id: delivery.id }) })
  try {
    await eventually(() => settled.length >= count, 60_000, `${count} deliveries settled`)
  } finally {
    await consumer.stop()
  }
  return settled
}
