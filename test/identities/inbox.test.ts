// Message ids that are not well-formed UTF-16 on every inbox store: "evt-\ud800" and
// "evt-\udc00" both hash (as UTF-8) to the key of "evt-\uFFFD". The inbox refuses such an
// id and dead-letters the message, under a key of the id's own code units, so two
// refused ids are two dead letters, a redelivery finds its own, and no message is ever
// settled `duplicate` of another one.
import Database from 'better-sqlite3'
import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { webhookReceiver } from '../../src/http/webhooks/receiver.js'
import { InvalidKeyError } from '../../src/index.js'
import { createInbox, listDeadLetters, messageKey, type WithDeadLetterTable } from '../../src/queue/index.js'
import type { WithInboxTable } from '../../src/ports/inbox-table.js'
import { memoryStore } from '../../src/stores/memory/index.js'
import { postgresStore } from '../../src/stores/postgres/index.js'
import { redisStore } from '../../src/stores/redis/index.js'
import { sqliteStore, type SqliteDatabase } from '../../src/stores/sqlite/index.js'
import { testDynamo } from '../support/dynamodb.js'
import { testSchema } from '../support/postgres.js'
import { testRedis } from '../leased/support.js'

const pg = await testSchema('idem_identity_inbox')
const redis = await testRedis('identity-inbox')
const dynamo = await testDynamo('identity_inbox')
const sqlite = new Database(':memory:') as unknown as SqliteDatabase
afterAll(async () => {
  await Promise.all([pg?.drop(), redis?.drop(), dynamo?.drop()])
})

type AnyStore = WithInboxTable<unknown> & Partial<WithDeadLetterTable>
const stores: Array<[string, () => AnyStore]> = [
  ['memory', () => memoryStore() as AnyStore],
  ['sqlite', () => sqliteStore({ db: sqlite }) as AnyStore],
]
if (pg) stores.push(['postgres', () => postgresStore({ pool: pg.pool, schema: pg.schema }) as AnyStore])
if (redis) stores.push(['redis', () => redisStore({ client: redis.client, prefix: redis.prefix }) as unknown as AnyStore])
if (dynamo) stores.push(['dynamodb', () => dynamo.store as unknown as AnyStore])

beforeAll(async () => {
  sqliteStore({ db: sqlite }).migrate()
  if (pg) await postgresStore({ pool: pg.pool, schema: pg.schema }).migrate()
})

it('messageKey refuses an id that is not well-formed UTF-16 (its UTF-8 hash would be that of "\\uFFFD"), and keys any other', () => {
  expect(() => messageKey('evt-\ud800')).toThrow(InvalidKeyError)
  expect(() => messageKey('evt-\ud800')).toThrow('message id "evt-\\ud800" is not well-formed UTF-16')
  expect(messageKey('evt-\ufffd')).toMatch(/^sha256:[0-9a-f]{64}$/)
  expect(messageKey('evt-\ud83d\ude00')).not.toBe(messageKey('evt-\ufffd'))
})

describe.each(stores)('inbox on %s: message ids with a lone surrogate', (_, makeStore) => {
  it.each([
    ['the message id', false],
    ['idOf', true],
  ])('%s "evt-\\ud800" and "evt-\\udc00": each is dead-lettered under a key of its own, none settled duplicate, no handler runs', async (_, viaIdOf) => {
    const store = makeStore()
    const inbox = createInbox<unknown, { id: string }>({ store, consumer: `c-${randomUUID()}`, ...(viaIdOf ? { idOf: (m) => m.body.id } : {}) })
    const ran: string[] = []
    const consume = (id: string, redelivered = false) =>
      inbox.consume({ ...(viaIdOf ? {} : { id }), body: { id }, deliveryCount: redelivered ? 2 : 1, redelivered }, () => void ran.push(id))
    const first = await consume('evt-\ud800')
    const second = await consume('evt-\udc00')
    // On 4ef1791: the first was processed and the second settled duplicate, its handler never run.
    expect([first.status, second.status]).toEqual(['dead-lettered', 'dead-lettered'])
    expect(first.key).not.toBe(second.key)
    if (first.status === 'dead-lettered') expect(first.error).toMatch(/message id "evt-\\ud800" is not well-formed UTF-16/)
    expect(ran).toEqual([])
    // A redelivery of a refused message finds its own dead letter.
    expect(await consume('evt-\ud800', true)).toEqual({ status: 'duplicate', key: first.key })
    // A well-formed id that looks the same after UTF-8 decoding is a message of its own.
    expect((await consume('evt-\ufffd')).status).toBe('processed')
    expect(ran).toEqual(['evt-\ufffd'])
    if (store.deadLetters !== undefined) {
      const letters = await listDeadLetters(store as WithDeadLetterTable, { source: 'inbox', name: inbox.consumer })
      expect(letters.map((l) => l.messageKey).sort()).toEqual([first.key, second.key].sort())
    }
  })
})

describe.each(stores)('inbox on %s: a body with a lone surrogate', (_, makeStore) => {
  it('is kept as its JSON text when the message is dead-lettered (Postgres jsonb refuses "\\ud800")', async () => {
    const store = makeStore()
    const inbox = createInbox<unknown, unknown>({ store, consumer: `c-${randomUUID()}`, maxAttempts: 1 })
    const body = { note: 'half a pair: \ud800' }
    const result = await inbox.consume({ id: randomUUID(), body }, () => {
      throw new Error('cannot handle it')
    })
    // On 4ef1791 Postgres threw "invalid input syntax for type json": the message could never be dead-lettered.
    expect(result.status).toBe('dead-lettered')
    if (store.deadLetters !== undefined) {
      const [letter] = await listDeadLetters(store as WithDeadLetterTable, { source: 'inbox', name: inbox.consumer })
      expect(letter!.payload).toEqual({ json: JSON.stringify(body) })
      expect(JSON.parse((letter!.payload as { json: string }).json)).toEqual(body)
    }
  })
})

describe.skipIf(pg === undefined)('webhooks with event ids that are not well-formed UTF-16', () => {
  it('Stripe events "evt_\\ud800" and "evt_\\udc00" are each received and dead-lettered, never one a duplicate of the other', async () => {
    const store = postgresStore({ pool: pg!.pool, schema: pg!.schema })
    const ran: string[] = []
    const receive = webhookReceiver({
      inbox: createInbox({ store, consumer: `hooks-${randomUUID()}` }),
      eventId: 'stripe',
      handler: (_tx, event) => void ran.push(event.id),
    })
    const post = (id: string) => receive(new Request('http://hooks.test/stripe', { method: 'POST', body: `{"id":${JSON.stringify(id)},"type":"charge.succeeded"}` }))
    const answers = [await post('evt_\ud800'), await post('evt_\udc00')]
    const bodies = await Promise.all(answers.map((a) => a.json()))
    // On 4ef1791: { received: true } then { received: true, duplicate: true }, one handler run.
    expect(answers.map((a) => a.status)).toEqual([200, 200])
    expect(bodies).toEqual([
      { received: true, id: 'evt_\ud800', deadLettered: true },
      { received: true, id: 'evt_\udc00', deadLettered: true },
    ])
    expect(ran).toEqual([])
  })
})
