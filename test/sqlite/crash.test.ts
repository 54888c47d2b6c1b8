import Database from 'better-sqlite3'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { createIdem } from '../../src/index.js'
import { sqliteStore } from '../../src/stores/sqlite/index.js'
import { killAfterWrite } from '../support/crash.js'

describe('sqlite: a process killed inside the function', () => {
  const dir = mkdtempSync(join(tmpdir(), 'idem-sqlite-crash-'))
  const file = join(dir, 'crash.db')
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('leaves no effect and no key, and the retry runs exactly once', async () => {
    const setup = new Database(file)
    setup.pragma('journal_mode = WAL')
    sqliteStore({ db: setup }).migrate()
    setup.exec('CREATE TABLE effects (id TEXT NOT NULL)')
    setup.close()

    const key = 'order-killed'
    await killAfterWrite(['sqlite', file, key])

    const db = new Database(file)
    try {
      const rows = (table: string, column: string) =>
        (db.prepare(`SELECT count(*) AS n FROM ${table} WHERE ${column} = ?`).get(key) as { n: number }).n
      expect(rows('effects', 'id')).toBe(0)
      expect(rows('idem_keys', 'key')).toBe(0)

      const idem = createIdem({ store: sqliteStore({ db }) })
      let runs = 0
      const retry = () =>
        idem.run({ scope: 'crash', key, input: { key } }, (tx) => {
          runs++
          tx.prepare('INSERT INTO effects (id) VALUES (?)').run(key)
          return 'done'
        })
      expect(await retry()).toEqual({ value: 'done', replayed: false, stored: true })
      expect(await retry()).toEqual({ value: 'done', replayed: true, stored: true })
      expect(runs).toBe(1)
      expect(rows('effects', 'id')).toBe(1)
      expect(rows('idem_keys', 'key')).toBe(1)
    } finally {
      db.close()
    }
  })
})
