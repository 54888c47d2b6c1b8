import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createInbox, type InboxMessage } from '../../src/queue/index.js'
import { postgresStore } from '../../src/stores/postgres/index.js'
import type { PgClient } from '../../src/stores/postgres/driver/types.js'
import { testSchema, type TestSchema } from '../support/postgres.js'
import { random } from './support.js'

const db = await testSchema('idem_q_chaos', 16)
afterAll(() => db?.drop())

const MESSAGES = 10_000
const DUPLICATE_SHARE = 0.2
const WORKERS = 12

// The same run on real brokers, with crashes that drop the connection: chaosScenario in
// support.ts. This one keeps the broker in process and runs in a few seconds.
describe.skipIf(db === undefined)('inbox under duplicates and crashes (Postgres, in-process broker)', () => {
  const { pool, schema } = db as TestSchema
  beforeAll(async () => {
    await postgresStore({ pool, schema }).migrate()
    // No unique constraint: a second application of a message would show as a second row.
    await pool.query(`CREATE TABLE "${schema}".ledger (message_id text NOT NULL, amount integer NOT NULL)`)
  })

  it(`${MESSAGES} messages, ${DUPLICATE_SHARE * 100}% delivered twice, random crashes: each applied exactly once, none lost`, async () => {
    const seed = Number(process.env.IDEM_CHAOS_SEED ?? 20261130)
    const rand = random(seed)
    const inbox = createInbox<PgClient, { amount: number }>({ store: postgresStore({ pool, schema }), consumer: 'ledger', maxAttempts: 100 })

    // The "broker": every message once, 20% of them twice (a producer retry or a
    // redelivery), shuffled so copies sometimes overlap in time.
    type Pending = InboxMessage<{ amount: number }> & { deliveries: number }
    const queue: Pending[] = []
    for (let i = 0; i < MESSAGES; i++) {
      const message = { id: `msg-${i}`, body: { amount: (i % 97) + 1 } }
      queue.push({ ...message, deliveries: 0 })
      if (rand() < DUPLICATE_SHARE) queue.push({ ...message, deliveries: 0 })
    }
    for (let i = queue.length - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1))
      ;[queue[i], queue[j]] = [queue[j]!, queue[i]!]
    }
    const published = queue.length
    const acked = new Map<string, number>()
    const crashes = { beforeCommit: 0, afterCommit: 0 }
    const statuses: Record<string, number> = {}

    async function worker(): Promise<void> {
      for (let delivery = queue.shift(); delivery !== undefined; delivery = queue.shift()) {
        delivery.deliveries++
        const crash = rand()
        const result = await inbox.consume({ ...delivery, deliveryCount: delivery.deliveries }, async (tx, message) => {
          await tx.query(`INSERT INTO "${schema}".ledger (message_id, amount) VALUES ($1, $2)`, [message.id, message.body.amount])
          // The process dies after writing, before commit: everything rolls back.
          if (crash < 0.05) {
            crashes.beforeCommit++
            throw new Error('worker crashed mid-transaction')
          }
        })
        statuses[result.status] = (statuses[result.status] ?? 0) + 1
        if (result.status === 'failed' || result.status === 'in-flight') {
          queue.push(delivery) // nack: redelivered later
          continue
        }
        // The process dies after commit, before the ack reaches the broker: redelivered.
        if (crash >= 0.05 && crash < 0.1) {
          crashes.afterCommit++
          queue.push(delivery)
          continue
        }
        acked.set(delivery.id!, (acked.get(delivery.id!) ?? 0) + 1)
      }
    }
    await Promise.all(Array.from({ length: WORKERS }, worker))

    const { rows } = await pool.query(
      `SELECT count(*)::int AS rows, count(DISTINCT message_id)::int AS messages, coalesce(sum(amount), 0)::int AS total FROM "${schema}".ledger`,
    )
    let expectedTotal = 0
    for (let i = 0; i < MESSAGES; i++) expectedTotal += (i % 97) + 1
    expect(rows[0]).toEqual({ rows: MESSAGES, messages: MESSAGES, total: expectedTotal })
    expect(acked.size).toBe(MESSAGES) // none lost: every message was acknowledged
    expect(published).toBeGreaterThan(MESSAGES * 1.15)
    expect(crashes.beforeCommit).toBeGreaterThan(0)
    expect(crashes.afterCommit).toBeGreaterThan(0)
    expect(statuses['processed']).toBe(MESSAGES)
    expect(statuses['duplicate']).toBeGreaterThan(0)
    expect(statuses['dead-lettered'] ?? 0).toBe(0)
  })
})
