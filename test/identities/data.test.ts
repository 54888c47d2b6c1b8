// Memo names and versions, once kinds and subjects, outbox topics and dedupe keys become
// stored identities: a lone surrogate in any of them is refused by name, before the
// store, so "x\ud800" and "x\udc00" (both "x\uFFFD" in UTF-8 text) never share a memoised
// answer, a once mark or an outbox row.
import Database from 'better-sqlite3'
import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { InvalidOptionError } from '../../src/index.js'
import { createMemo, createOnce } from '../../src/data/index.js'
import { createOutbox } from '../../src/queue/index.js'
import { memoryStore } from '../../src/stores/memory/index.js'
import { postgresStore } from '../../src/stores/postgres/index.js'
import { sqliteStore, type SqliteDatabase } from '../../src/stores/sqlite/index.js'
import { testDynamo } from '../support/dynamodb.js'
import { testSchema } from '../support/postgres.js'

const pg = await testSchema('idem_identity_data')
const dynamo = await testDynamo('identity_data')
const raw = new Database(':memory:')
const sqlite = raw as unknown as SqliteDatabase
const pgStore = pg && postgresStore({ pool: pg.pool, schema: pg.schema })
beforeAll(async () => {
  sqliteStore({ db: sqlite }).migrate()
  await pgStore?.migrate()
})
afterAll(async () => {
  await Promise.all([pg?.drop(), dynamo?.drop()])
})

/** What each of the two calls gave: a value, or the class of the error it threw. */
async function both<T>(call: (variant: string) => T | Promise<T>): Promise<unknown[]> {
  const out: unknown[] = []
  for (const variant of ['\ud800', '\udc00']) {
    try {
      out.push(await call(variant))
    } catch (error) {
      out.push(error instanceof Error ? `${error.constructor.name}: ${error.message}` : error)
    }
  }
  return out
}
const refused = (field: RegExp) => [expect.stringMatching(field), expect.stringMatching(field)]

describe('memo', () => {
  const stores: Array<[string, () => Parameters<typeof createMemo>[0]['store']]> = [
    ['memory', () => memoryStore()],
    ['sqlite', () => sqliteStore({ db: sqlite })],
  ]
  if (pgStore) stores.push(['postgres', () => pgStore])
  it.each(stores)('%s: names and versions "n\\ud800" and "n\\udc00" are refused, never one memoised answer', async (_, store) => {
    const memo = createMemo({ store: store() })
    const input = randomUUID()
    // On 4ef1791 Postgres answered the second name with the first one's output.
    expect(await both((v) => memo(`n${v}`, input, () => `computed for ${JSON.stringify(v)}`))).toEqual(refused(/^InvalidOptionError: memo: "name" .*well-formed UTF-16/))
    expect(await both((v) => memo('n', input, () => `computed for ${JSON.stringify(v)}`, { version: `v${v}` }))).toEqual(refused(/^InvalidOptionError: memo: option "version" .*well-formed UTF-16/))
  })
})

describe('once', () => {
  it('sqlite: kinds and subjects with a lone surrogate are refused', () => {
    const once = createOnce({ store: sqliteStore({ db: sqlite }) })
    for (const [kind, subject] of [['k\ud800', 'x'], ['k', 'x\udc00']]) {
      expect(() => raw.transaction(() => once(sqlite, kind!, subject!))()).toThrow(InvalidOptionError)
    }
  })

  it.skipIf(pgStore === undefined)('postgres: "k\\ud800" and "k\\udc00" are refused, never one mark', async () => {
    const once = createOnce({ store: pgStore! })
    const subject = randomUUID()
    const inTx = async <T>(work: (client: import('pg').PoolClient) => Promise<T>) => {
      const client = await pg!.pool.connect()
      try {
        await client.query('BEGIN')
        const out = await work(client)
        await client.query('COMMIT')
        return out
      } catch (error) {
        await client.query('ROLLBACK')
        throw error
      } finally {
        client.release()
      }
    }
    // On 4ef1791: [true, false], the second kind found the first one's mark.
    expect(await both((v) => inTx((tx) => once(tx, `k${v}`, subject)))).toEqual(refused(/^InvalidOptionError: once: "kind" .*well-formed UTF-16/))
    expect(await both((v) => inTx((tx) => once(tx, 'k', `${subject}${v}`)))).toEqual(refused(/^InvalidOptionError: once: "subject" .*well-formed UTF-16/))
  })

  it.skipIf(dynamo === undefined)('dynamodb: "k\\ud800" and "k\\udc00" are refused, never one mark', async () => {
    const { store } = dynamo!
    const once = createOnce({ store })
    const subject = randomUUID()
    // On 4ef1791: [true, false].
    expect(await both((v) => store.transaction((tx) => once(tx, `k${v}`, subject)))).toEqual(refused(/^InvalidOptionError: once: "kind" .*well-formed UTF-16/))
    expect(await both((v) => store.transaction((tx) => once(tx, 'k', `${subject}${v}`)))).toEqual(refused(/^InvalidOptionError: once: "subject" .*well-formed UTF-16/))
  })
})

describe('outbox', () => {
  it('sqlite: a topic or dedupe key with a lone surrogate is refused', () => {
    const outbox = createOutbox({ store: sqliteStore({ db: sqlite }) })
    expect(() => raw.transaction(() => outbox.add(sqlite, { topic: 't\ud800', payload: 1, dedupeKey: 'd' }))()).toThrow(/"topic" .*well-formed UTF-16/)
    expect(() => raw.transaction(() => outbox.add(sqlite, { topic: 't', payload: 1, dedupeKey: 'd\udc00' }))()).toThrow(/"dedupeKey" .*well-formed UTF-16/)
  })

  it('sqlite: a payload holding a lone surrogate is refused by name; an escaped backslash before "ud800" is not one', () => {
    const outbox = createOutbox({ store: sqliteStore({ db: sqlite }) })
    const add = (payload: unknown) => raw.transaction(() => outbox.add(sqlite, { topic: 't', payload, dedupeKey: randomUUID() }))()
    expect(() => add({ note: 'x\ud800' })).toThrow(/^outbox.add: "payload" .*not well-formed UTF-16/)
    expect(() => add(['\\\udc00'])).toThrow(/"payload" .*not well-formed UTF-16/)
    expect(() => add({ note: '\\ud800 and 😀' })).not.toThrow()
  })

  it.skipIf(pgStore === undefined)('postgres: a payload holding a lone surrogate is refused by name, not a DatabaseError', async () => {
    const outbox = createOutbox({ store: pgStore! })
    // On dfea6ee: Postgres' "unsupported Unicode escape sequence" (a DatabaseError) surfaced from add.
    expect(await both((v) => outbox.add(pg!.pool, { topic: 'email', payload: { to: `a${v}` }, dedupeKey: randomUUID() }))).toEqual(
      refused(/^InvalidOptionError: outbox.add: "payload" .*not well-formed UTF-16/),
    )
    const ok = await outbox.add(pg!.pool, { topic: 'email', payload: { to: '\\ud800 😀' }, dedupeKey: randomUUID() })
    expect(ok).toBe(true)
  })

  it.skipIf(pgStore === undefined)('postgres: dedupe keys "d\\ud800" and "d\\udc00" are refused, never one row', async () => {
    const outbox = createOutbox({ store: pgStore! })
    const base = randomUUID()
    // On 4ef1791: [true, false], the second effect was dropped as a repeat of the first.
    expect(await both((v) => outbox.add(pg!.pool, { topic: 'email', payload: { n: 1 }, dedupeKey: `${base}${v}` }))).toEqual(
      refused(/^InvalidOptionError: outbox.add: "dedupeKey" .*well-formed UTF-16/),
    )
  })
})
