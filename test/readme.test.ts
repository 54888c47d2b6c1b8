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
    expect(lines[2]).toMatch(/^422 \{"type":"urn:idem:problem#fingerprint-mismatch"/)
    expect(lines[3]).toBe('201 {"orderId":2,"amount":700}')
    expect(lines[4]).toBe('orders in the table: 2')
  })
})

describe('README: the first screen', () => {
  const section = (heading: string) => {
    const start = readme.indexOf(`\n## ${heading}\n`)
    expect(start, `README.md has a "## ${heading}" section`).toBeGreaterThan(-1)
    return readme.slice(start, readme.indexOf('\n## ', start + 1))
  }

  it('opens with what a user installs, then a first example', () => {
    expect([...readme.matchAll(/^## (.+)$/gm)].slice(0, 2).map((match) => match[1])).toEqual(['Install', 'First steps'])
  })

  it('first steps: the example runs as shown and prints what the README says', async () => {
    expectReadmeShows('examples/first.mjs')
    const printed = /It prints[^\n]*\n\n```\n([\s\S]*?)```/.exec(section('First steps'))
    expect(printed, 'the section shows what the example prints').not.toBeNull()
    const { stdout } = await run(process.execPath, [join(root, 'examples/first.mjs')])
    expect(stdout).toBe(printed![1])
  })

  it('install: the sizes it states are what npm pack makes (within 15%)', async () => {
    const stated = /is ([\d.]+) kB packed, ([\d.]+) MB unpacked/.exec(section('Install'))
    expect(stated, 'the install section states the packed and unpacked size').not.toBeNull()
    const { stdout } = await run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: root, maxBuffer: 16 * 1024 * 1024 })
    const { size, unpackedSize, files } = (JSON.parse(stdout) as Array<{ size: number; unpackedSize: number; files: { path: string }[] }>)[0]!
    // What the sizes are made of: the built code and its types, the docs, the ops files; no
    // source maps (the sources are not shipped) and no compiled tests.
    expect(files.filter(({ path }) => path.endsWith('.map'))).toEqual([])
    expect(files.filter(({ path }) => /\.test\.(js|d\.ts|cjs|d\.cts)$/.test(path))).toEqual([])
    expect(Math.abs(size / 1000 / Number(stated![1]) - 1), `packed ${size} B`).toBeLessThan(0.15)
    expect(Math.abs(unpackedSize / 1e6 / Number(stated![2]) - 1), `unpacked ${unpackedSize} B`).toBeLessThan(0.15)
  })

  it('install: the Node versions it states are package.json\'s engines', () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { engines: { node: string } }
    expect(pkg.engines.node).toBe('^20.19.0 || >=22.12.0')
    expect(section('Install')).toContain('Node.js ^20.19 or ≥ 22.12')
  })
})
