import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, describe, expect, it } from 'vitest'
import { PG_URL, testSchema } from './support/postgres.js'

const run = promisify(execFile)
const root = new URL('..', import.meta.url).pathname
const readme = readFileSync(join(root, 'README.md'), 'utf8')

/** The README shows each example file whole; this keeps the two from drifting apart. */
function expectReadmeShows(file: string): void {
  const source = readFileSync(join(root, file), 'utf8').trim()
  expect(readme.includes(source), `README.md must show ${file} verbatim`).toBe(true)
}

describe('README examples', () => {
  const dir = mkdtempSync(join(tmpdir(), 'idem-readme-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('quickstart: runs as shown and charges once', async () => {
    expectReadmeShows('examples/quickstart.mjs')
    const env = { ...process.env, QUICKSTART_DB: join(dir, 'quickstart.db') }
    const { stdout } = await run(process.execPath, [join(root, 'examples/quickstart.mjs')], { env })
    expect(stdout).toBe(
      'attempt 1: charge 1\nattempt 2: charge 1 (replayed)\nattempt 3: charge 1 (replayed)\ncharges in the table: 1\n',
    )
    // A second run of the program is a retry too: it replays and charges nothing.
    const again = await run(process.execPath, [join(root, 'examples/quickstart.mjs')], { env })
    expect(again.stdout).toContain('attempt 1: charge 1 (replayed)')
    expect(again.stdout).toContain('charges in the table: 1')
  })

  it('postgres: runs as shown, replays, and refuses a changed request', async () => {
    expectReadmeShows('examples/postgres.mjs')
    const db = await testSchema('idem_readme')
    if (db === undefined) return
    try {
      const env = { ...process.env, DATABASE_URL: PG_URL, IDEM_SCHEMA: db.schema }
      const { stdout } = await run(process.execPath, [join(root, 'examples/postgres.mjs')], { env })
      expect(stdout).toBe("{ orderId: '1', replayed: false }\n{ orderId: '1', replayed: true }\nFingerprintMismatchError fingerprint-mismatch\n")
    } finally {
      await db.drop()
    }
  })
})

describe('README: the HTTP example', () => {
  it('runs as shown: fresh, replayed, 422, fresh, two rows', async () => {
    expectReadmeShows('examples/http-hono.mjs')
    const { stdout } = await run(process.execPath, [join(root, 'examples/http-hono.mjs')])
    const lines = stdout.trim().split('\n')
    expect(lines[0]).toBe('201 {"orderId":1,"amount":1500}')
    expect(lines[1]).toBe('201 (replayed) {"orderId":1,"amount":1500}')
    expect(lines[2]).toMatch(/^422 \{"type":"https:\/\/github.com\/idem-js\/idem\/blob\/main\/docs\/problems.md#fingerprint-mismatch"/)
    expect(lines[3]).toBe('201 {"orderId":2,"amount":700}')
    expect(lines[4]).toBe('orders in the table: 2')
  })
})
