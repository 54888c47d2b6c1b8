import { randomBytes, randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import { expect } from 'vitest'
import { contentId } from '../../src/data/index.js'
import { upsert } from '../../src/data/index.js'
import { createDispatcher, createInbox, createOutbox, handleDelivery, startConsumer, type OutboxRow } from '../../src/queue/index.js'
import type { Delivery, MessageSource } from '../../src/queue/index.js'
import { postgresDialect, postgresStore } from '../../src/stores/postgres/index.js'
import type { PgClient } from '../../src/stores/postgres/driver/types.js'
import { patience } from '../support/patience.js'
import type { TestSchema } from '../support/postgres.js'

/** A name no other test file or rerun uses (queues, streams, subjects). */
export function unique(prefix: string): string {
  return `${prefix}_${randomBytes(4).toString('hex')}`
}

/**
 * Connects to a broker within `guardMs` (scaled by the machine's load: test/support/patience.ts).
 * Outside CI an unreachable broker makes the file skip (with a SKIPPED line); with CI set it
 * fails the run.
 */
export async function reach<T>(name: string, url: string, connect: () => Promise<T>, guardMs = 5_000): Promise<T | undefined> {
  const timeoutMs = patience(guardMs)
  let timer: NodeJS.Timeout | undefined
  try {
    return await Promise.race([
      connect(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs)
      }),
    ])
  } catch (error) {
    if (process.env.CI) throw new Error(`${name} at ${url} is required in CI: ${(error as Error).message}`)
    console.warn(`SKIPPED: ${name} at ${url} is unreachable (${(error as Error).message})`)
    return undefined
  } finally {
    clearTimeout(timer)
  }
}

/** The Redis the queue tests use (override with IDEM_TEST_REDIS_URL). */
export const REDIS_URL = process.env.IDEM_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'

/** The test Redis as BullMQ's connection options: host and port (BullMQ 5 takes no `url`). */
export const BULLMQ_CONNECTION = { host: new URL(REDIS_URL).hostname, port: Number(new URL(REDIS_URL).port || 6379) }

/** An ioredis connection to the test Redis, as `reach` gives it: undefined (and skipped) outside CI when it does not answer. */
export function reachRedis(): Promise<Redis | undefined> {
  return reach('Redis', REDIS_URL, async () => {
    const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1, connectTimeout: 3_000, retryStrategy: () => null })
    await redis.connect()
    await redis.ping()
    return redis
  })
}

/**
 * Polls `check` until it returns true. `guardMs` is a hang guard, written for an idle
 * machine and scaled by its load (test/support/patience.ts): past it the wait is declared
 * hung, and nothing is asserted about how long it took.
 */
export async function eventually(check: () => boolean | Promise<boolean>, guardMs = 15_000, what = 'condition'): Promise<void> {
  const timeoutMs = patience(guardMs)
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (await check()) return
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/** What each broker's test file supplies to the shared scenarios. */
export interface BrokerHarness {
  /** Publishes a JSON message with a broker message id. */
  publish(id: string, body: unknown): Promise<void>
  /** A source on a connection of its own; `crash` drops that connection without settling anything. */
  open(): Promise<{ source: MessageSource; crash(): Promise<void>; close(): Promise<void> }>
  /** The outbox deliverer that publishes to the same queue. */
  deliverer(): (row: OutboxRow) => Promise<void>
  /** Messages in the broker's own dead-letter place (queue, stream), if it has one. */
  brokerDeadLetters(): Promise<number | undefined>
  /** Messages still waiting or unacknowledged in the queue, if the broker can tell. */
  outstanding?(): Promise<number>
  /** Copies of a message published twice that reach consumers: 1 where the broker drops repeats itself (NATS). */
  copiesOfRepeat: 1 | 2
}

const CHUNKS = 58

/**
 * The seed scenario: an intake worker takes a claim, writes 58 chunk rows by content
 * id, hands one "claim received" email to the outbox, commits, and crashes before
 * acking. The broker redelivers; afterwards the table holds 58 rows and exactly one
 * email reached the mail deliverer.
 */
export async function seedScenario(broker: BrokerHarness, db: TestSchema): Promise<void> {
  const { pool, schema } = db
  const table = `chunks_${randomBytes(3).toString('hex')}`
  await pool.query(`CREATE TABLE "${schema}".${table} (id text PRIMARY KEY, claim_id text NOT NULL, n integer NOT NULL, text text NOT NULL)`)
  const store = postgresStore({ pool, schema })
  const inbox = createInbox<PgClient, { claimId: string; chunks: string[] }>({ store, consumer: unique('intake') })
  const outbox = createOutbox({ store })
  let handlerRuns = 0
  const handler = async (tx: PgClient, message: { body: { claimId: string; chunks: string[] } }) => {
    handlerRuns++
    const { claimId, chunks } = message.body
    for (let n = 0; n < chunks.length; n++) {
      await upsert(postgresDialect, tx, { schema, table, key: 'id', columns: ['claim_id', 'n', 'text'] }, { id: contentId('claim', claimId, 'chunk', n), claim_id: claimId, n, text: chunks[n] })
    }
    await outbox.add(tx, { topic: 'email', payload: { to: 'claimant@example.com', template: 'claim-received', claimId }, dedupeKey: `claim-received:${claimId}` })
  }

  const claimId = randomUUID()
  await broker.publish(`claim-${claimId}`, { claimId, chunks: Array.from({ length: CHUNKS }, (_, n) => `chunk ${n} of claim ${claimId}`) })

  // Worker 1 commits, then dies before its ack reaches the broker.
  const first = await broker.open()
  const crashed: string[] = []
  const subscription = await first.source.subscribe(async (delivery: Delivery) => {
    const result = await inbox.consume({ id: delivery.id, body: JSON.parse(Buffer.from(delivery.data).toString('utf8')), deliveryCount: delivery.deliveryCount, redelivered: delivery.redelivered }, handler)
    crashed.push(result.status)
    // No ack: the process "dies" here.
  })
  await eventually(() => crashed.length === 1, 15_000, 'the first delivery')
  // Stop the worker's loop (it settles nothing), then drop its connection.
  await subscription.close()
  await first.crash()
  expect(crashed).toEqual(['processed'])

  // Worker 2 (a restart) gets the redelivery; the inbox recognises it.
  const second = await broker.open()
  const settled: string[] = []
  const consumer = await startConsumer<PgClient, { claimId: string; chunks: string[] }>({
    inbox,
    source: second.source,
    handler,
    onSettled: (result) => settled.push(result.status),
  })
  await eventually(() => settled.length >= 1, 20_000, 'the redelivery')
  await consumer.stop()
  await second.close()
  expect(settled).toEqual(['duplicate'])
  expect(handlerRuns).toBe(1)

  const { rows } = await pool.query(`SELECT count(*)::int AS n FROM "${schema}".${table} WHERE claim_id = $1`, [claimId])
  expect(rows[0].n).toBe(CHUNKS)

  // The mail deliverer (an email provider that would honour the idempotency key).
  const emails: OutboxRow[] = []
  const dispatcher = createDispatcher({ store, deliver: async (row) => void emails.push(row) })
  await dispatcher.drain()
  expect(emails).toHaveLength(1)
  expect(emails[0]).toMatchObject({ topic: 'email', dedupeKey: `claim-received:${claimId}`, payload: { template: 'claim-received', claimId } })
  if (broker.outstanding) expect(await broker.outstanding()).toBe(0)
}

/**
 * A poison message (the handler always throws) goes to the dead letters after
 * `maxAttempts` with its error, in idem's table and the broker's own dead-letter
 * place; the messages after it are processed.
 */
export async function poisonScenario(broker: BrokerHarness, db: TestSchema): Promise<void> {
  const { pool, schema } = db
  const store = postgresStore({ pool, schema })
  const consumerName = unique('poison')
  const inbox = createInbox<PgClient, { n: number; poison?: boolean }>({ store, consumer: consumerName, maxAttempts: 3 })
  const processed: number[] = []
  const connection = await broker.open()
  const settled: string[] = []
  const consumer = await startConsumer<PgClient, { n: number; poison?: boolean }>({
    inbox,
    source: connection.source,
    retry: { baseMs: 10, maxMs: 50 },
    handler: (_tx, message) => {
      if (message.body.poison) throw new Error(`cannot parse claim form ${message.body.n}`)
      processed.push(message.body.n)
    },
    onSettled: (result) => settled.push(result.status),
  })
  await broker.publish(unique('poison-msg'), { n: 0, poison: true })
  for (let n = 1; n <= 3; n++) await broker.publish(unique('good-msg'), { n })
  await eventually(() => settled.includes('dead-lettered') && processed.length === 3, 20_000, 'the poison message to be dead-lettered')
  await consumer.stop()
  await connection.close()
  expect(processed.sort()).toEqual([1, 2, 3])
  expect(settled.filter((s) => s === 'failed')).toHaveLength(2)
  const { rows } = await pool.query(`SELECT attempts, last_error, payload FROM "${schema}".idem_dead_letters WHERE source = 'inbox' AND name = $1`, [consumerName])
  expect(rows).toHaveLength(1)
  expect(rows[0]).toMatchObject({ attempts: 3, payload: { n: 0, poison: true } })
  expect(rows[0].last_error).toContain('cannot parse claim form 0')
  const brokerSide = await broker.brokerDeadLetters()
  if (brokerSide !== undefined) await eventually(async () => (await broker.brokerDeadLetters()) === 1, 5_000, 'the broker dead letter')
  if (broker.outstanding) await eventually(async () => (await broker.outstanding!()) === 0, 5_000, 'an empty queue')
}

/**
 * The outbox deliverer publishes with the dedupe key as the message id; a repeated
 * delivery (a dispatcher that crashed after sending) is consumed once.
 */
export async function delivererScenario(broker: BrokerHarness, db: TestSchema): Promise<void> {
  const { pool, schema } = db
  const inbox = createInbox<PgClient, { n: number }>({ store: postgresStore({ pool, schema }), consumer: unique('downstream') })
  const deliver = broker.deliverer()
  const row: OutboxRow = { id: '1', topic: 'ignored', payload: { n: 7 }, dedupeKey: unique('effect'), attempt: 1, lastError: null, createdAt: new Date() }
  await deliver(row)
  await deliver({ ...row, attempt: 2 })
  const connection = await broker.open()
  const seen: string[] = []
  let runs = 0
  const subscription = await connection.source.subscribe(async (delivery) => {
    const result = await handleDelivery<PgClient, { n: number }>(inbox, delivery, () => void runs++)
    seen.push(`${result.status}:${delivery.id}`)
  })
  await eventually(() => seen.length === broker.copiesOfRepeat, 10_000, 'the copies')
  await subscription.close()
  await connection.close()
  expect(runs).toBe(1)
  // Copies may be handled concurrently, and a duplicate's ack can land before the
  // original's: which copy finishes first is not fixed, only that one of them ran.
  expect(seen.filter((entry) => entry === `processed:${row.dedupeKey}`)).toHaveLength(1)
  expect(seen.filter((entry) => entry === `duplicate:${row.dedupeKey}`)).toHaveLength(seen.length - 1)
}

/** A deterministic PRNG (mulberry32): a failing run can be replayed with its seed. */
export function random(seed: number): () => number {
  return () => {
    seed |= 0
    seed = (seed + 0x6d2b79f5) | 0
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

export interface ChaosOptions {
  messages?: number
  /** Share of messages published twice. */
  duplicateShare?: number
  /** Workers consuming at once; a crashed one is replaced at once. */
  workers?: number
  /** Crashes of each kind (mid-transaction, after commit before the ack), spread at random over the run. */
  crashesOfEachKind?: number
  /** The hang guard on every message being applied and acknowledged (180 s on an idle machine, scaled by its load). */
  appliedWithinMs?: number
}

/**
 * 10,000 messages on the real broker, 20% of them published twice, consumed by workers
 * that crash at random: some mid-transaction (their writes roll back), some after
 * commit and before the ack reaches the broker. A crash drops the worker's connection
 * without settling anything it holds, so the broker redelivers all of it (its other
 * messages may still commit meanwhile, as in a process that dies between statements),
 * and a new worker takes its place. Afterwards every message's effect is in the table
 * exactly once (it has no unique constraint: a second application would be a second
 * row), none is missing, and the broker has nothing left to deliver.
 */
export async function chaosScenario(
  broker: BrokerHarness,
  db: TestSchema,
  { messages = 10_000, duplicateShare = 0.2, workers = 3, crashesOfEachKind = 6, appliedWithinMs = 180_000 }: ChaosOptions = {},
): Promise<void> {
  const { pool, schema } = db
  const ledger = `"${schema}".ledger_${randomBytes(3).toString('hex')}`
  await pool.query(`CREATE TABLE ${ledger} (message_id text NOT NULL, amount integer NOT NULL)`)
  const seed = Number(process.env.IDEM_CHAOS_SEED ?? 20261130)
  const rand = random(seed)
  // Failures from mid-transaction crashes are counted; none may dead-letter a message here.
  const store = postgresStore({ pool, schema })
  await store.migrate()
  const inbox = createInbox<PgClient, { amount: number }>({ store, consumer: unique('ledger'), maxAttempts: 1_000 })

  const published: string[] = []
  for (let i = 0; i < messages; i++) {
    published.push(`msg-${i}`)
    if (rand() < duplicateShare) published.push(`msg-${i}`)
  }
  for (let i = published.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1))
    ;[published[i], published[j]] = [published[j]!, published[i]!]
  }
  const amountOf = (id: string) => (Number(id.slice(4)) % 97) + 1
  for (const id of published) await broker.publish(id, { amount: amountOf(id) })

  // The crashes happen at delivery ordinals picked in advance, spread over the run: the
  // nth handler run (or ack) of a live worker. Every message is handled and acked at
  // least once, so each ordinal up to 90% of `messages` is reached.
  const ordinals = () => {
    const picked = new Set<number>()
    while (picked.size < crashesOfEachKind) picked.add(1 + Math.floor(rand() * messages * 0.9))
    return picked
  }
  const crashAt = { midTransaction: ordinals(), afterCommit: ordinals() }
  const seen = { midTransaction: 0, afterCommit: 0 }
  const crashes = { midTransaction: 0, afterCommit: 0 }
  const due = (kind: keyof typeof crashes) => crashAt[kind].has(++seen[kind])
  const statuses: Record<string, number> = {}
  const live = new Set<{ stop(): Promise<void> }>()
  const starting: Promise<void>[] = []

  async function startWorker(): Promise<void> {
    const connection = await broker.open()
    let dead = false
    let consumer: { stop(): Promise<void> } | undefined
    const worker = {
      async stop() {
        await consumer?.stop()
        await connection.close()
      },
    }
    // Nothing the dead worker holds is settled: its connection is gone, and the broker
    // redelivers it all. Handlers already running may still commit.
    const crash = (kind: keyof typeof crashes) => {
      dead = true
      crashes[kind]++
      live.delete(worker)
      void consumer?.stop().catch(() => {})
      void connection.crash()
      starting.push(startWorker())
    }
    const source: MessageSource = {
      name: connection.source.name,
      subscribe: (onDelivery) =>
        connection.source.subscribe((delivery) =>
          onDelivery({
            id: delivery.id,
            data: delivery.data,
            headers: delivery.headers,
            deliveryCount: delivery.deliveryCount,
            redelivered: delivery.redelivered,
            async ack() {
              if (dead) return
              if (due('afterCommit')) return crash('afterCommit')
              await delivery.ack()
            },
            nack: async (delayMs) => (dead ? undefined : delivery.nack(delayMs)),
            deadLetter: async (reason) => (dead ? undefined : delivery.deadLetter(reason)),
          }),
        ),
    }
    consumer = await startConsumer<PgClient, { amount: number }>({
      inbox,
      source,
      retry: { baseMs: 10, maxMs: 100 },
      storeRetryMs: 10,
      handler: async (tx, message) => {
        await tx.query(`INSERT INTO ${ledger} (message_id, amount) VALUES ($1, $2)`, [message.id, message.body.amount])
        if (!dead && due('midTransaction')) {
          crash('midTransaction')
          throw new Error('the worker died mid-transaction')
        }
      },
      onSettled: (result) => {
        if (!dead) statuses[result.status] = (statuses[result.status] ?? 0) + 1
      },
    })
    // Crashed while subscribing: stop what is left of it.
    if (dead) void consumer.stop().catch(() => {})
    else live.add(worker)
  }

  for (let i = 0; i < workers; i++) starting.push(startWorker())
  await Promise.all([...starting])
  const applied = async () => Number((await pool.query(`SELECT count(DISTINCT message_id)::int AS n FROM ${ledger}`)).rows[0].n)
  let progress = ''
  const done = async () => {
    const n = await applied()
    const waiting = broker.outstanding === undefined ? 0 : await broker.outstanding()
    progress = `${n} of ${messages} applied, ${waiting} outstanding, crashes ${JSON.stringify(crashes)}, statuses ${JSON.stringify(statuses)}`
    return n === messages && waiting === 0
  }
  try {
    await eventually(done, appliedWithinMs, 'every message applied and acknowledged')
  } catch (error) {
    throw new Error(`${(error as Error).message}: ${progress}`)
  }
  // Replacements started by late crashes, if any, are stopped too.
  while (starting.length > 0) await starting.shift()
  for (const worker of live) await worker.stop()

  const { rows } = await pool.query(`SELECT count(*)::int AS rows, count(DISTINCT message_id)::int AS messages, sum(amount)::int AS total FROM ${ledger}`)
  let total = 0
  for (let i = 0; i < messages; i++) total += amountOf(`msg-${i}`)
  expect(rows[0]).toEqual({ rows: messages, messages, total })
  expect(published.length).toBeGreaterThan(messages * (1 + duplicateShare * 0.75))
  expect(crashes).toEqual({ midTransaction: crashesOfEachKind, afterCommit: crashesOfEachKind })
  expect(statuses['duplicate']).toBeGreaterThan(0)
  expect(statuses['dead-lettered'] ?? 0).toBe(0)
}
