import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { EXIT } from '../../src/cli/io.js'
import { reconcileCommand } from '../../src/cli/idem.js'
import { PG_URL, testSchema, type TestSchema } from '../support/postgres.js'
import { testSqlite } from './sqlite.js'

function capture() {
  const out: string[] = []
  const err: string[] = []
  return { io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l) }, out, err }
}

describe('idem reconcile (CLI)', () => {
  const files = testSqlite('idem-reconcile-cli')
  const db = files.open('app')
  db.exec('CREATE TABLE summaries (intake_id TEXT, prompt_version TEXT)')
  db.exec(`INSERT INTO summaries VALUES ('i1', 'v7'), ('i1', 'v7'), ('i2', 'v7')`)
  db.exec('CREATE TABLE clean AS SELECT DISTINCT * FROM summaries')
  const file = db.name
  afterAll(() => files.close())

  it('exits 1 above the threshold and prints the offending groups', async () => {
    const { io, out } = capture()
    expect(await reconcileCommand(['--sqlite', file, '--table', 'summaries', '--columns', 'intake_id,prompt_version'], io)).toBe(EXIT.exceeded)
    expect(out[0]).toBe('summaries (intake_id, prompt_version): 1 duplicate row of 3, 33.3% (threshold 0.0100%) — EXCEEDED')
    expect(out[1]).toBe('  2 rows: {"intake_id":"i1","prompt_version":"v7"}')
  })

  it('counts in words that agree with the number: "1 duplicate row", "2 duplicate rows", "1 more group"', async () => {
    const two = capture()
    expect(await reconcileCommand(['--sqlite', file, '--table', 'summaries', '--columns', 'prompt_version', '--limit', '0'], two.io)).toBe(EXIT.exceeded)
    expect(two.out).toEqual(['summaries (prompt_version): 2 duplicate rows of 3, 66.7% (threshold 0.0100%) — EXCEEDED', '  … and 1 more group'])
    const none = capture()
    expect(await reconcileCommand(['--sqlite', file, '--table', 'clean', '--columns', 'intake_id'], none.io)).toBe(EXIT.ok)
    expect(none.out).toEqual(['clean (intake_id): 0 duplicate rows of 2, 0.00% (threshold 0.0100%)'])
  })

  it('exits 0 at or below the threshold, and prints JSON with --json', async () => {
    const { io, out } = capture()
    expect(await reconcileCommand(['--sqlite', file, '--table', 'clean', '--columns', 'intake_id', '--json'], io)).toBe(EXIT.ok)
    expect(JSON.parse(out[0]!)).toMatchObject({ totalRows: 2, duplicateRows: 0, exceeded: false })
    const loose = capture()
    expect(await reconcileCommand(['--sqlite', file, '--table', 'summaries', '--columns', 'intake_id', '--threshold', '0.5'], loose.io)).toBe(EXIT.ok)
  })

  it.each([
    ['no connection', ['--table', 'summaries', '--columns', 'a'], /idem reconcile: no database given\n {2}fix: pass exactly one of --postgres <url> or --sqlite <file>/],
    ['both connections', ['--sqlite', 'x', '--postgres', 'postgres://h/y', '--table', 't', '--columns', 'a'], /--postgres and --sqlite given together/],
    ['an unknown flag', ['--sqlite', 'x', '--table', 't', '--columns', 'a', '--nope'], /idem: unknown option '--nope'/],
    ['a bad threshold', ['--sqlite', 'FILE', '--table', 'summaries', '--columns', 'intake_id', '--threshold', 'lots'], /option '--threshold <rate>' argument 'lots' is invalid/],
    ['a missing file', ['--sqlite', '/nonexistent/app.db', '--table', 't', '--columns', 'a'], /idem reconcile: no SQLite database at \/nonexistent\/app\.db/],
    ['a missing table', ['--sqlite', 'FILE', '--table', 'nope', '--columns', 'a'], /idem reconcile: no such table: nope/],
  ])('exits 2 on %s, saying why', async (_, argv, message) => {
    const { io, err } = capture()
    expect(await reconcileCommand(argv.map((a) => (a === 'FILE' ? file : a)), io)).toBe(EXIT.usage)
    expect(err.join('\n')).toMatch(message)
  })
})

const pgDb = await testSchema('idem_data_reconcile_cli', 2)

describe.skipIf(pgDb === undefined)('idem reconcile --postgres (real Postgres)', () => {
  const { pool, schema } = pgDb as TestSchema
  beforeAll(async () => {
    await pool.query(`CREATE TABLE "${schema}".summaries (intake_id text, prompt_version text)`)
    await pool.query(`INSERT INTO "${schema}".summaries VALUES ('i1', 'v7'), ('i1', 'v7'), ('i2', 'v7')`)
  })
  afterAll(() => pgDb?.drop())

  it('connects, reports and exits 1 above the threshold', async () => {
    const { io, out } = capture()
    const argv = ['--postgres', PG_URL, '--schema', schema, '--table', 'summaries', '--columns', 'intake_id,prompt_version', '--json']
    expect(await reconcileCommand(argv, io)).toBe(EXIT.exceeded)
    expect(JSON.parse(out[0]!)).toMatchObject({ totalRows: 3, duplicateRows: 1, groups: [{ values: { intake_id: 'i1', prompt_version: 'v7' }, rows: 2 }] })
  })
})
