// docs/policy.md shows the example options module verbatim and, between its markers,
// exactly what the generator writes for those options; `idem policy` prints the same
// page from the module, in each format, and refuses what it cannot load.
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, describe, expect, it } from 'vitest'
import { main } from '../../src/cli/idem.js'
import { idempotencyPolicy } from '../../src/http/fetch/index.js'
import { expectPageShows, page, root } from './support.js'

const run = promisify(execFile)
const cli = join(root, 'dist/cli/idem.js')
const MODULE = 'examples/policy/idempotency-options.mjs'

function capture(): { io: { out(line: string): void; err(line: string): void }; out: string[]; err: string[] } {
  const out: string[] = []
  const err: string[] = []
  return { io: { out: (line) => out.push(line), err: (line) => err.push(line) }, out, err }
}

describe('docs/policy.md', () => {
  it('shows the example module and the policy the generator writes for it, verbatim', async () => {
    expectPageShows('docs/policy.md', MODULE)
    const options = (await import(join(root, MODULE))).default
    const text = page('docs/policy.md')
    const shown = text.slice(text.indexOf('<!-- idem policy: begin -->\n') + '<!-- idem policy: begin -->\n'.length, text.indexOf('<!-- idem policy: end -->'))
    expect(shown).toBe(idempotencyPolicy(options, { format: 'md', headingLevel: 3 }))
    // What the example's options change is on the page.
    expect(shown).toContain('header on `POST` requests')
    expect(shown).toContain('are stored for 2 days')
    expect(shown).toContain('](https://docs.example.com/errors#fingerprint-mismatch)')
  })
})

describe('idem policy', () => {
  const dir = mkdtempSync(join(tmpdir(), 'idem-policy-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('prints the page of docs/policy.md from the example module (the built CLI)', async () => {
    const { stdout } = await run(process.execPath, [cli, 'policy', '--config', join(root, MODULE), '--heading-level', '3'])
    const text = page('docs/policy.md')
    expect(text).toContain(`<!-- idem policy: begin -->\n${stdout}<!-- idem policy: end -->`)
  })

  it('renders md, html and json of the same options; reads an "idempotency" property too', async () => {
    const file = join(dir, 'nested.mjs')
    writeFileSync(file, 'export default { port: 3000, idempotency: { methods: ["PUT"], ttlMs: 3600000, required: false } }\n')
    const json = capture()
    expect(await main(['policy', '--config', file, '--format', 'json'], json.io)).toBe(0)
    const doc = JSON.parse(json.out.join('\n'))
    expect(doc).toMatchObject({ methods: ['PUT'], retentionMs: 3_600_000, required: false, scope: 'shared' })
    const html = capture()
    expect(await main(['policy', '--config', file, '--format', 'html', '--title', 'Retries'], html.io)).toBe(0)
    expect(html.out.join('\n')).toMatch(/^<!doctype html>[\s\S]*<h1>Retries<\/h1>[\s\S]*stored for 1 hour/)
    const md = capture()
    expect(await main(['policy', '--config', file], md.io)).toBe(0)
    expect(md.out.join('\n')).toBe(idempotencyPolicy({ methods: ['PUT'], ttlMs: 3_600_000, required: false }, { format: 'md' }).trimEnd())
  })

  it('exits 2 with a message for a missing module, one without options, invalid options, or bad flags', async () => {
    const noDefault = join(dir, 'none.mjs')
    writeFileSync(noDefault, 'export const x = 1\n')
    const invalid = join(dir, 'invalid.mjs')
    writeFileSync(invalid, 'export default { ttlMs: -1 }\n')
    const cases: Array<[string[], RegExp]> = [
      [['--config', join(dir, 'missing.mjs')], /cannot load .*missing\.mjs[\s\S]*fix:/],
      [['--config', noDefault], /has no options as its default export[\s\S]*fix: end the module with export default/],
      [['--config', invalid], /option "ttlMs"[\s\S]*fix: fix the option/],
      [['--config', invalid, '--format', 'pdf'], /'--format <format>' argument 'pdf' is invalid/],
      [['--format', 'md'], /required option '--config <module>'/],
    ]
    for (const [argv, message] of cases) {
      const { io, err } = capture()
      expect(await main(['policy', ...argv], io), argv.join(' ')).toBe(2)
      expect(err.join('\n')).toMatch(message)
    }
  })
})
