// The data helpers (`idem/data`) on the runtime: content ids are the same digest as on
// Node, upserts, once and reconcile run through the runtime's own SQLite, memo on its store;
// and `encryptedStore` (`idem/encrypted`) seals outcomes with the runtime's AES-GCM.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'vitest'
import { createIdem } from 'idem'
import { contentId, createMemo, createOnce, reconcile, upsert } from 'idem/data'
import { encryptedStore } from 'idem/encrypted'
import { sqliteDialect, sqliteStore } from 'idem/sqlite'
import type { SliceGroup } from './main.js'
import { SLICE_GROUPS } from './plan.js'
import { ownSqlite } from './runtime.js'

export const dataGroup: SliceGroup = {
  name: SLICE_GROUPS.find((name) => name.startsWith('data: '))!,
  async open() {
    const dir = mkdtempSync(join(tmpdir(), 'idem-runtime-data-'))
    const db = (await ownSqlite())(join(dir, 'data.db'))
    db.exec('PRAGMA journal_mode = WAL')
    const store = sqliteStore({ db })
    store.migrate()
    db.exec('CREATE TABLE chunks (id TEXT PRIMARY KEY, text TEXT NOT NULL)')
    db.exec('CREATE TABLE summaries (id INTEGER PRIMARY KEY, intake_id TEXT NOT NULL, prompt_version TEXT NOT NULL)')
    return {
      cases: [
        {
          name: 'contentId is the digest Node computes (docs/data.md)',
          run() {
            expect(contentId.uuid('claim', 42, 'chunk', 3, 'embed=v4')).toBe('79edbb22-6113-8fd1-8785-835c50f6a5fe')
          },
        },
        {
          name: 'upsert on SQLite in a store transaction: written again, still one row, with the latest columns',
          async run() {
            const id = contentId.uuid('doc', 'runtime', 'chunk', 1)
            const spec = { table: 'chunks', key: 'id', columns: ['text'] }
            await store.transaction((tx) => upsert(sqliteDialect, tx, spec, { id, text: 'first' }))
            await store.transaction((tx) => upsert(sqliteDialect, tx, spec, { id, text: 'second' }))
            expect(db.prepare('SELECT id, text FROM chunks').all().map((row) => ({ ...(row as object) }))).toEqual([{ id, text: 'second' }])
          },
        },
        {
          name: 'memo on the SQLite store runs the step once per input and returns its first output after',
          async run() {
            const memo = createMemo({ store })
            let calls = 0
            const summarise = () => memo('summarise', { intake: 'i-1' }, async () => ({ summary: `s${++calls}` }))
            expect(await summarise()).toEqual({ summary: 's1' })
            expect(await summarise()).toEqual({ summary: 's1' })
            expect(calls).toBe(1)
          },
        },
        {
          name: 'once in a store transaction: true the first time, false ever after; a rolled-back mark is forgotten',
          async run() {
            const once = createOnce({ store })
            await expect(store.transaction((tx) => {
              expect(once(tx, 'claim-received-email', 'c-1')).toBe(true)
              throw new Error('the email could not be queued')
            })).rejects.toThrow('could not be queued')
            expect(await store.transaction((tx) => once(tx, 'claim-received-email', 'c-1'))).toBe(true)
            expect(await store.transaction((tx) => once(tx, 'claim-received-email', 'c-1'))).toBe(false)
          },
        },
        {
          name: 'encryptedStore over the SQLite store: the row holds ciphertext, the replay the value',
          async run() {
            const key = new Uint8Array(32).fill(7)
            const idem = createIdem({ store: encryptedStore(store, { keys: { k1: key }, current: 'k1' }) })
            const call = () => idem.run({ scope: 'enc', key: 'order-1', input: { amount: 5 } }, () => ({ secret: 'card 4242' }))
            expect(await call()).toMatchObject({ value: { secret: 'card 4242' }, replayed: false })
            expect(await call()).toMatchObject({ value: { secret: 'card 4242' }, replayed: true })
            const { outcome } = db.prepare("SELECT outcome FROM idem_keys WHERE scope = 'enc'").get() as { outcome: string }
            expect(outcome).not.toContain('4242')
          },
        },
        {
          name: 'reconcile on SQLite finds the duplicate rows a replay-unsafe write left',
          async run() {
            const insert = db.prepare('INSERT INTO summaries (intake_id, prompt_version) VALUES (?, ?)')
            insert.run('i-1', 'v3')
            insert.run('i-1', 'v3')
            insert.run('i-2', 'v3')
            const report = await reconcile({ dialect: sqliteDialect, client: db, table: 'summaries', columns: ['intake_id', 'prompt_version'], threshold: 0 })
            expect(report).toMatchObject({ totalRows: 3, duplicateRows: 1, groupCount: 1, exceeded: true })
          },
        },
      ],
      async close() {
        db.close()
        rmSync(dir, { recursive: true, force: true })
      },
    }
  },
}
