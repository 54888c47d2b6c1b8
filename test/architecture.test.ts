// The architecture's rules on imports (.dependency-cruiser.cjs) hold for src/, and a
// forbidden import is caught: the rules are checked, not just written down.
import { execFile } from 'node:child_process'
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, describe, expect, it } from 'vitest'

const run = promisify(execFile)
const root = new URL('..', import.meta.url).pathname
const depcruise = join(root, 'node_modules/.bin/depcruise')

interface Violation {
  rule: { name: string }
  from: string
  to: string
}

/** Cruises `src` of `cwd` with the project's rules; returns the violations. */
async function violations(cwd: string): Promise<Violation[]> {
  const { stdout } = await run(depcruise, ['src', '--config', join(root, '.dependency-cruiser.cjs'), '--output-type', 'json'], { cwd, maxBuffer: 64 * 1024 * 1024 }).catch(
    // depcruise exits non-zero when it finds violations; its JSON is still on stdout.
    (error: { stdout?: string }) => ({ stdout: error.stdout ?? '' }),
  )
  return (JSON.parse(stdout) as { summary: { violations: Violation[] } }).summary.violations
}

describe('the import rules (.dependency-cruiser.cjs)', () => {
  const probe = mkdtempSync(join(tmpdir(), 'idem-architecture-'))
  afterAll(() => rmSync(probe, { recursive: true, force: true }))

  it('hold for the library: no forbidden import, no circle', async () => {
    expect(await violations(root)).toEqual([])
  })

  it('catch a forbidden import: a front end reaching a driver, the core reaching HTTP, the client reaching the queue', async () => {
    const files: Record<string, string> = {
      'src/stores/postgres/store.ts': 'export const postgresStore = 1\n',
      'src/http/problem.ts': 'export const problem = 1\n',
      'src/queue/inbox.ts': "import { postgresStore } from '../stores/postgres/store.js'\nexport const inbox = postgresStore\n",
      'src/core/engine.ts': "import { problem } from '../http/problem.js'\nexport const engine = problem\n",
      'src/client/client.ts': "import { inbox } from '../queue/inbox.js'\nexport const client = inbox\n",
    }
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(dirname(join(probe, path)), { recursive: true })
      writeFileSync(join(probe, path), text)
    }
    copyFileSync(join(root, 'tsconfig.json'), join(probe, 'tsconfig.json'))
    const found = (await violations(probe)).map((v) => `${v.rule.name}: ${v.from} → ${v.to}`).sort()
    expect(found).toEqual([
      'client-has-no-server-code: src/client/client.ts → src/queue/inbox.ts',
      'core-is-pure: src/core/engine.ts → src/http/problem.ts',
      'front-ends-know-no-driver: src/queue/inbox.ts → src/stores/postgres/store.ts',
    ])
  })
})
