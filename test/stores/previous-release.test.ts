// The stored rows of the Postgres and SQLite stores are those of the previous release
// (before the SQL stores' protocol, src/stores/sql/): rows its code wrote are read by this
// code, and the other way round, for keys, inbox ids (and their failure counts), outbox
// rows and once marks; and both write the same rows for the same calls. The previous
// release's stores run from its own source, checked out of git (test/support/previous-release.ts),
// side by side with this checkout's on one schema or one database file, as in a rolling deploy.
import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { KeyStore } from '../../src/ports/key-store.js'
import type { WithInboxTable } from '../../src/ports/inbox-table.js'
import type { WithOnceTable } from '../../src/ports/once-table.js'
import type { WithOutboxTable } from '../../src/ports/outbox-table.js'
import { postgresStore, type PgClient } from '../../src/stores/postgres/index.js'
import { sqliteStore, type SqliteDatabase } from '../../src/stores/sqlite/index.js'
import { testSchema, type TestSchema } from '../support/postgres.js'
import { previousRelease, PREVIOUS_RELEASE } from '../support/previous-release.js'
import { sqliteDrivers } from '../support/sqlite.js'

const release = await previousRelease()
afterAll(() => release.remove())

type Store<Tx> = KeyStore<Tx> & WithInboxTable<Tx> & WithOutboxTable<Tx, boolean | Promise<boolean>> & WithOnceTable<Tx, boolean | Promise<boolean>>

/** One release's store on the shared tables, and a transaction of the caller's to add outbox rows and marks in. */
interface Side<Tx> {
  readonly store: Store<Tx>
  inTransaction(work: (tx: Tx) => Promise<unknown>): Promise<void>
}

/** The columns of what one call stored, times made relative (a retention) and ids left out: equal for equal calls. */
interface StoredRows {
  key(key: string): Promise<unknown[]>
  inboxId(consumer: string, id: string): Promise<unknown[]>
  outbox(dedupeKey: string): Promise<unknown[]>
  mark(subject: string): Promise<unknown[]>
}

// A fingerprint and an outcome with what tends to break a text: quotes, backslashes, astral characters, and size.
const RECORD = { fingerprint: `v1:${'9f'.repeat(32)}`, outcome: JSON.stringify({ status: 201, body: `é😀'"\\ ${'x'.repeat(100_000)}` }) }
const PAYLOAD = JSON.stringify({ n: 1, text: `é😀'"\\` })

/** The cases for a writer and a reader of two releases, both ways. */
function crossReleases<Tx>(sides: () => { previous: Side<Tx>; current: Side<Tx> }, stored: () => StoredRows): void {
  const pairs = [
    ['the previous release', 'this release', (s: ReturnType<typeof sides>) => [s.previous, s.current] as const],
    ['this release', 'the previous release', (s: ReturnType<typeof sides>) => [s.current, s.previous] as const],
  ] as const
  describe.each(pairs)('written by %s, read by %s', (_written, _read, pick) => {
    it('keys: a committed record replays, byte for byte', async () => {
      const [writer, reader] = pick(sides())
      const key = `key-${randomUUID()}`
      const session = await writer.store.begin({ scope: 'tenant', key, waitMs: 0 })
      expect(session.claim).toEqual({ state: 'new' })
      await session.commit({ ...RECORD, ttlMs: 60_000 })
      for (const store of [reader.store, writer.store]) {
        const replay = await store.begin({ scope: 'tenant', key, waitMs: 0 })
        expect(replay.claim).toEqual({ state: 'found', record: RECORD })
        await replay.rollback()
      }
    })

    it('inbox: a recorded id is processed; failures counted by either are taken by the other', async () => {
      const [writer, reader] = pick(sides())
      const consumer = `consumer-${randomUUID()}`
      const [done, failing] = [randomUUID(), randomUUID()]
      const claim = (key: string) => ({ consumer, key, waitMs: 0, retentionMs: 60_000 })
      const first = await writer.store.inbox.begin(claim(done))
      expect(first.state).toBe('new')
      await first.commit()
      const again = await reader.store.inbox.begin(claim(done))
      expect(again.state).toBe('processed')
      await again.rollback()
      expect(await writer.store.inbox.recordFailure(consumer, failing, 'first')).toBe(1)
      expect(await reader.store.inbox.recordFailure(consumer, failing, 'second')).toBe(2)
      const retried = await reader.store.inbox.begin(claim(failing))
      expect(await retried.takeFailures()).toMatchObject({ attempts: 2, lastError: 'second' })
      await retried.commit()
      expect((await writer.store.inbox.begin(claim(failing))).state).toBe('processed')
    })

    it('outbox: a queued row is claimed, retried and delivered across releases', async () => {
      const [writer, reader] = pick(sides())
      const pending = await reader.store.outbox.pending()
      const topic = `topic-${randomUUID()}`
      await writer.inTransaction(async (tx) => expect(await writer.store.outbox.add(tx, { topic, dedupeKey: 'a', payload: PAYLOAD, delayMs: 0 })).toBe(true))
      await reader.inTransaction(async (tx) => expect(await reader.store.outbox.add(tx, { topic, dedupeKey: 'a', payload: '{}', delayMs: 0 })).toBe(false))
      const claimId = `claim-${randomUUID()}`
      const [row] = await reader.store.outbox.claim(claimId, 100, 60_000, null)
      expect(row).toMatchObject({ topic, dedupeKey: 'a', payload: JSON.parse(PAYLOAD), attempts: 1, lastError: null })
      await reader.store.outbox.retry(claimId, [{ id: row!.id, delayMs: 0, error: 'refused' }])
      const [retry] = await writer.store.outbox.claim('second', 100, 60_000, null)
      expect(retry).toMatchObject({ id: row!.id, topic, dedupeKey: 'a', attempts: 2, lastError: 'refused' })
      expect(retry!.createdAt.getTime()).toBe(row!.createdAt.getTime())
      await writer.store.outbox.delivered('second', [row!.id])
      expect(await reader.store.outbox.pending()).toBe(pending)
    })

    it('once: a committed mark is there for the other', async () => {
      const [writer, reader] = pick(sides())
      const subject = randomUUID()
      await writer.inTransaction(async (tx) => expect(await writer.store.once.mark(tx, 'welcome-email', subject)).toBe(true))
      await reader.inTransaction(async (tx) => expect(await reader.store.once.mark(tx, 'welcome-email', subject)).toBe(false))
    })
  })

  it('both releases write the same rows for the same calls', async () => {
    const { previous, current } = sides()
    const rows = stored()
    const written = new Map<Side<Tx>, { key: string; id: string; dedupeKey: string; subject: string }>()
    for (const side of [previous, current]) {
      const names = { key: `same-${randomUUID()}`, id: randomUUID(), dedupeKey: randomUUID(), subject: randomUUID() }
      written.set(side, names)
      const session = await side.store.begin({ scope: 'tenant', key: names.key, waitMs: 0 })
      await session.commit({ ...RECORD, ttlMs: 60_000 })
      const inbox = await side.store.inbox.begin({ consumer: 'same', key: names.id, waitMs: 0, retentionMs: 90_000 })
      await inbox.commit()
      await side.inTransaction(async (tx) => {
        await side.store.outbox.add(tx, { topic: 'same', dedupeKey: names.dedupeKey, payload: PAYLOAD, delayMs: 5_000 })
        await side.store.once.mark(tx, 'same', names.subject)
      })
    }
    const of = async (side: Side<Tx>) => {
      const names = written.get(side)!
      return [await rows.key(names.key), await rows.inboxId('same', names.id), await rows.outbox(names.dedupeKey), await rows.mark(names.subject)]
    }
    const before = await of(previous)
    expect(before.every((part) => part.length === 1)).toBe(true)
    expect(await of(current)).toEqual(before)
  })
}

const db = await testSchema('idem_previous')
afterAll(() => db?.drop())

describe.skipIf(db === undefined)(`Postgres: this release and the previous one (${PREVIOUS_RELEASE.slice(0, 7)})`, () => {
  const { pool, schema: base } = db as TestSchema
  describe.each(['table', 'daily-partitions'] as const)('keyLayout %s', (keyLayout) => {
    const schema = `${base}_${keyLayout === 'table' ? 't' : 'd'}`
    const current = postgresStore({ pool, schema, keyLayout })
    const previous = release.postgres.postgresStore({ pool, schema, keyLayout })
    beforeAll(async () => {
      await pool.query(`CREATE SCHEMA "${schema}"`)
      await current.migrate()
    })
    afterAll(() => pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`))
    const inTransaction = async (work: (tx: PgClient) => Promise<unknown>): Promise<void> => {
      const client = await pool.connect()
      try {
        await client.query('BEGIN')
        await work(client)
        await client.query('COMMIT')
      } finally {
        client.release()
      }
    }
    const s = `"${schema}"`
    const rows = async (text: string, value: string): Promise<unknown[]> => (await pool.query(text, [value])).rows
    const keys = keyLayout === 'table' ? 'idem_keys' : 'idem_keys_by_day'
    crossReleases<PgClient>(
      () => ({ previous: { store: previous, inTransaction }, current: { store: current, inTransaction } }),
      () => ({
        key: (key) => rows(`SELECT scope, fingerprint, outcome, expires_at - created_at AS kept FROM ${s}.${keys} WHERE key = $1`, key),
        inboxId: (consumer, id) => rows(`SELECT consumer, expires_at > now() + interval '80 seconds' AS kept FROM ${s}.idem_inbox WHERE message_key = $1`, id),
        outbox: (dedupeKey) =>
          rows(
            `SELECT topic, payload, attempts, locked_by, locked_until, last_error, delivered_at, next_attempt_at - created_at AS delay FROM ${s}.idem_outbox WHERE dedupe_key = $1`,
            dedupeKey,
          ),
        mark: (subject) => rows(`SELECT kind FROM ${s}.idem_once WHERE subject = $1`, subject),
      }),
    )
  })
})

const { available, missing } = await sqliteDrivers()
for (const driver of available) {
  describe(`SQLite on ${driver.name}: this release and the previous one, each on a connection of its own to one file`, () => {
    const dir = mkdtempSync(join(tmpdir(), 'idem-previous-release-'))
    const [previousDb, currentDb] = [driver.open(join(dir, 'shared.db')), driver.open(join(dir, 'shared.db'))]
    currentDb.exec('PRAGMA journal_mode = WAL')
    const current = sqliteStore({ db: currentDb })
    current.migrate()
    const previous = release.sqlite.sqliteStore({ db: previousDb })
    afterAll(() => {
      previousDb.close()
      currentDb.close()
      rmSync(dir, { recursive: true, force: true })
    })
    const side = (store: typeof current): Side<SqliteDatabase> => ({ store, inTransaction: async (work) => void (await store.transaction(work)) })
    const rows = (text: string, ...values: unknown[]): Promise<unknown[]> => Promise.resolve(currentDb.prepare(text).all(...values).map((row) => ({ ...(row as object) })))
    crossReleases<SqliteDatabase>(
      () => ({ previous: side(previous), current: side(current) }),
      () => ({
        key: (key) => rows('SELECT scope, fingerprint, outcome, expires_at - created_at AS kept FROM idem_keys WHERE key = ?', key),
        inboxId: (consumer, id) => rows('SELECT scope, fingerprint, outcome, expires_at - created_at AS kept FROM idem_keys WHERE scope = ? AND key = ?', `inbox:${consumer}`, id),
        outbox: (dedupeKey) =>
          rows(
            'SELECT topic, payload, attempts, locked_by, locked_until, last_error, delivered_at, next_attempt_at - created_at AS delay FROM idem_outbox WHERE dedupe_key = ?',
            dedupeKey,
          ),
        mark: (subject) => rows('SELECT kind FROM idem_once WHERE subject = ?', subject),
      }),
    )
  })
}
// Said, not hidden: which driver this Node cannot run.
for (const what of missing) it.skip(`SQLite on ${what}: this release and the previous one`)
