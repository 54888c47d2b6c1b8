import Database from 'better-sqlite3'
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, describe, expect, it } from 'vitest'
import { PG_URL, testSchema } from '../support/postgres.js'

const run = promisify(execFile)
const cli = new URL('../../dist/cli/idem.js', import.meta.url).pathname

describe('the idem command', () => {
  const dir = mkdtempSync(join(tmpdir(), 'idem-cli-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('migrates a SQLite file once, then reports it is current', async () => {
    const file = join(dir, 'app.db')
    const first = await run(process.execPath, [cli, 'migrate', '--sqlite', file])
    expect(first.stdout).toMatch(/migrated from version 0 to \d+/)
    const again = await run(process.execPath, [cli, 'migrate', '--sqlite', file])
    expect(again.stdout).toMatch(/already at version \d+/)
    const db = new Database(file)
    expect(db.prepare("SELECT name FROM sqlite_master WHERE name = 'idem_keys'").get()).toEqual({ name: 'idem_keys' })
    db.close()
  })

  it('migrates and prunes a Postgres schema', async () => {
    const db = await testSchema('idem_cli')
    if (db === undefined) return
    try {
      const migrated = await run(process.execPath, [cli, 'migrate', '--postgres', PG_URL, '--schema', db.schema])
      expect(migrated.stdout).toMatch(/migrated from version 0/)
      await db.pool.query(
        `INSERT INTO "${db.schema}".idem_keys (scope, key, fingerprint, outcome, expires_at) VALUES ('s', 'old', 'f', 'null', now() - interval '1 second')`,
      )
      const pruned = await run(process.execPath, [cli, 'prune', '--postgres', PG_URL, '--schema', db.schema])
      expect(pruned.stdout).toContain('pruned 1 expired keys')
    } finally {
      await db.drop()
    }
  })

  it('prints the SQL a DBA would apply, per dialect', async () => {
    const { stdout } = await run(process.execPath, [cli, 'sql', 'postgres', '--schema', 'billing'])
    expect(stdout).toContain('CREATE TABLE "billing".idem_keys')
    expect(stdout).toContain('CREATE FUNCTION "billing".idem_claim')
    expect((await run(process.execPath, [cli, 'sql', 'sqlite'])).stdout).toContain('CREATE TABLE idem_keys')
  })

  it('refuses mistakes with exit code 2 and the usage', async () => {
    await expect(run(process.execPath, [cli, 'frobnicate'])).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining('unknown command') })
    await expect(run(process.execPath, [cli, 'migrate'])).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining('--postgres <url> or --sqlite <file>') })
    await expect(run(process.execPath, [cli, 'migrate', '--postgres', 'postgres://postgres@127.0.0.1:1/x'])).rejects.toMatchObject({ code: 2 })
  })
})
