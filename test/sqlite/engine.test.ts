import Database from 'better-sqlite3'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { createIdem, InvalidOptionError, MigrationRequiredError, StoreUnavailableError } from '../../src/index.js'
import { sqliteStore } from '../../src/stores/sqlite/index.js'

describe('sqlite engine', () => {
  const dir = mkdtempSync(join(tmpdir(), 'idem-sqlite-engine-'))
  const open = (name: string) => {
    const db = new Database(join(dir, name))
    db.pragma('journal_mode = WAL')
    return db
  }
  afterAll(() => rmSync(dir, { recursive: true, force: true }))
  /** A migrated store on a file of its own, with an `effects` table, and an engine on it. */
  const withEffects = (name: string) => {
    const db = open(name)
    const store = sqliteStore({ db })
    store.migrate()
    db.exec('CREATE TABLE effects (id TEXT)')
    return { db, store, idem: createIdem({ store }) }
  }

  it('joins a transaction the caller opened; the caller rollback undoes effect and key', async () => {
    const { db, idem } = withEffects('joined.db')
    for (const end of ['ROLLBACK', 'COMMIT']) {
      db.exec('BEGIN IMMEDIATE')
      await idem.run({ scope: 's', key: 'k', input: 1, tx: db }, (tx) => {
        tx.prepare("INSERT INTO effects VALUES ('k')").run()
        return end
      })
      db.exec(end)
    }
    expect(db.prepare('SELECT count(*) AS n FROM effects').get()).toEqual({ n: 1 })
    expect(await idem.run({ scope: 's', key: 'k', input: 1 }, () => 'never')).toEqual({ value: 'COMMIT', replayed: true, stored: true })
    await expect(idem.run({ scope: 's', key: 'x', input: 1, tx: db }, () => 1)).rejects.toThrow(/no open transaction/)
    await expect(idem.run({ scope: 's', key: 'x', input: 1, tx: open('other.db') }, () => 1)).rejects.toThrow(InvalidOptionError)
    db.close()
  })

  it('a retry never replays a joined call whose enclosing transaction is still open (it may yet roll back)', async () => {
    const { db, store, idem } = withEffects('joined-open.db')
    let runs = 0
    const call = () =>
      idem.run({ scope: 's', key: 'order-1', input: 1 }, (tx) => {
        runs++
        tx.prepare("INSERT INTO effects VALUES ('order-1')").run()
        return 'done'
      })
    const enclosing = store.transaction(async (tx) => {
      await idem.run({ scope: 's', key: 'order-1', input: 1, tx }, (t) => {
        runs++
        t.prepare("INSERT INTO effects VALUES ('order-1')").run()
        return 'done'
      })
      // The joined call wrote its record; the enclosing transaction is still open…
      const retry = call()
      await new Promise((resolve) => setTimeout(resolve, 30))
      // …and rolls back: the retry must not have been answered from that record.
      throw Object.assign(new Error('enclosing rollback'), { retry })
    }).catch((error: Error & { retry: ReturnType<typeof call> }) => error)
    const error = await enclosing
    expect(error.message).toBe('enclosing rollback')
    expect(await error.retry).toEqual({ value: 'done', replayed: false, stored: true })
    expect(runs).toBe(2)
    expect(db.prepare('SELECT count(*) AS n FROM effects').get()).toEqual({ n: 1 })
    expect(await call()).toEqual({ value: 'done', replayed: true, stored: true })
    db.close()
  })

  it('a slow call on one key makes other keys wait for the writer, not fail', async () => {
    const db = open('queue.db')
    const store = sqliteStore({ db })
    store.migrate()
    const idem = createIdem({ store, waitMs: 0 })
    const slow = idem.run({ scope: 's', key: 'slow', input: 1 }, async () => {
      await new Promise((resolve) => setTimeout(resolve, 100))
      return 'slow'
    })
    const others = await Promise.all(['a', 'b', 'c'].map((key) => idem.run({ scope: 's', key, input: 1 }, () => key)))
    expect(others.map((r) => r.value)).toEqual(['a', 'b', 'c'])
    expect((await slow).value).toBe('slow')
    db.close()
  })

  it('gives up on a writer held past busyTimeoutMs with StoreUnavailableError', async () => {
    const db = open('busy.db')
    const store = sqliteStore({ db, busyTimeoutMs: 50 })
    store.migrate()
    const idem = createIdem({ store })
    let release!: () => void
    const held = idem.run({ scope: 's', key: 'holder', input: 1 }, () => new Promise<string>((resolve) => (release = () => resolve('held'))))
    await new Promise((resolve) => setTimeout(resolve, 10))
    await expect(idem.run({ scope: 's', key: 'other', input: 1 }, () => 1)).rejects.toThrow(/busy for 50 ms/)
    release()
    expect((await held).value).toBe('held')
    expect((await idem.run({ scope: 's', key: 'other', input: 1 }, () => 1)).value).toBe(1)
    db.close()
  })

  it('a missing table is MigrationRequiredError; a closed database is StoreUnavailableError', async () => {
    const db = open('unmigrated.db')
    const idem = createIdem({ store: sqliteStore({ db }) })
    await expect(idem.run({ scope: 's', key: 'k', input: 1 }, () => 1)).rejects.toThrow(MigrationRequiredError)
    await expect(idem.run({ scope: 's', key: 'k', input: 1 }, () => 1)).rejects.toThrow(/store\.migrate\(\)/)
    db.close()
    await expect(idem.run({ scope: 's', key: 'k', input: 1 }, () => 1)).rejects.toThrow(StoreUnavailableError)
  })
})

describe('sqlite pruning', () => {
  it('walks the table in windows, deleting only expired records', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'idem-sqlite-prune-'))
    const db = new Database(join(dir, 'prune.db'))
    const store = sqliteStore({ db })
    store.migrate()
    const idem = createIdem({ store })
    for (let i = 0; i < 25; i++) await idem.run({ scope: 'prune', key: `old-${i}`, input: i, ttlMs: 1 }, () => i)
    for (const key of ['a-live', 'z-live']) await idem.run({ scope: 'prune', key, input: 1 }, () => key)
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(await store.prune({ batchSize: 4 })).toBe(25)
    expect(db.prepare('SELECT key FROM idem_keys ORDER BY key').all()).toEqual([{ key: 'a-live' }, { key: 'z-live' }])
    db.close()
    rmSync(dir, { recursive: true, force: true })
  })
})

describe('sqlite store.transaction', () => {
  it('queues behind an engine call instead of joining its transaction', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'idem-sqlite-tx-'))
    const db = new Database(join(dir, 'tx.db'))
    const store = sqliteStore({ db })
    store.migrate()
    db.exec('CREATE TABLE jobs (id TEXT)')
    const idem = createIdem({ store })
    let release!: () => void
    const call = idem.run({ scope: 's', key: 'k', input: 1 }, async () => {
      await new Promise<void>((resolve) => (release = resolve))
      throw new Error('the call fails and rolls back')
    })
    await new Promise((resolve) => setTimeout(resolve, 10))
    const job = store.transaction((tx) => tx.prepare("INSERT INTO jobs VALUES ('outside')").run().changes)
    release()
    await expect(call).rejects.toThrow('rolls back')
    expect(await job).toBe(1)
    // Had the job joined the call's transaction, the call's rollback would have undone it.
    expect(db.prepare('SELECT id FROM jobs').all()).toEqual([{ id: 'outside' }])
    await expect(store.transaction(() => Promise.reject(new Error('no')))).rejects.toThrow('no')
    expect(db.inTransaction).toBe(false)
    db.close()
    rmSync(dir, { recursive: true, force: true })
  })
})
