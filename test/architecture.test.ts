// The architecture's rules on imports (.dependency-cruiser.cjs) hold for src/, and every
// one of them catches the import it forbids: the rules are checked, not just written down.
import { execFile } from 'node:child_process'
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, describe, expect, it } from 'vitest'

const run = promisify(execFile)
const root = new URL('..', import.meta.url).pathname
const config = join(root, '.dependency-cruiser.cjs')
const depcruise = join(root, 'node_modules/.bin/depcruise')

interface Violation {
  rule: { name: string }
  from: string
  to: string
}

/** Cruises `src` of `cwd` with the project's rules; returns the violations. */
async function violations(cwd: string): Promise<Violation[]> {
  const { stdout } = await run(depcruise, ['src', '--config', config, '--output-type', 'json'], { cwd, maxBuffer: 64 * 1024 * 1024 }).catch(
    // depcruise exits non-zero when it finds violations; its JSON is still on stdout.
    (error: { stdout?: string }) => ({ stdout: error.stdout ?? '' }),
  )
  return (JSON.parse(stdout) as { summary: { violations: Violation[] } }).summary.violations
}

/**
 * One forbidden import per rule: `from` imports `to`, and only the named rule forbids it.
 * Planted in a throwaway tree, never in src.
 */
const PLANTED: { rule: string; from: string; to: string }[] = [
  { rule: 'core-is-pure', from: 'src/core/engine.ts', to: 'src/http/problem.ts' },
  // The core knows no HTTP: not the request fingerprint, not the header both ends speak.
  { rule: 'core-is-pure', from: 'src/core/fingerprint.ts', to: 'src/http/request-fingerprint.ts' },
  { rule: 'core-is-pure', from: 'src/core/key.ts', to: 'src/headers/idempotency-key.ts' },
  { rule: 'headers-are-shared', from: 'src/headers/idempotency-key.ts', to: 'src/http/handler.ts' },
  { rule: 'front-ends-know-no-driver', from: 'src/queue/inbox.ts', to: 'src/stores/postgres/store.ts' },
  { rule: 'queue-knows-no-http', from: 'src/queue/outbox.ts', to: 'src/http/webhook.ts' },
  { rule: 'data-stands-alone', from: 'src/data/once.ts', to: 'src/queue/dispatcher.ts' },
  { rule: 'http-is-a-front-end', from: 'src/http/handler.ts', to: 'src/cli/idem.ts' },
  { rule: 'lambda-is-a-front-end', from: 'src/lambda/sqs-batch.ts', to: 'src/ops/recorder.ts' },
  { rule: 'front-ends-know-no-driver', from: 'src/lambda/engine.ts', to: 'src/stores/dynamodb/store.ts' },
  { rule: 'client-has-no-server-code', from: 'src/client/client.ts', to: 'src/queue/consumer.ts' },
  { rule: 'ports-are-contracts', from: 'src/ports/inbox-table.ts', to: 'src/queue/payload.ts' },
  { rule: 'stores-implement-ports-only', from: 'src/stores/sqlite/store.ts', to: 'src/http/options.ts' },
  // No whitelist: a store reaches the queue's and data's contracts in ports/, never their folders.
  { rule: 'stores-implement-ports-only', from: 'src/stores/dynamodb/store.ts', to: 'src/data/reconcile.ts' },
  { rule: 'one-driver-per-store', from: 'src/stores/redis/store.ts', to: 'src/stores/memory/store.ts' },
  // The dialect is pure: it reaches neither the driver nor the store's operations that run it.
  { rule: 'dialect-knows-no-driver', from: 'src/stores/postgres/dialect/keys.ts', to: 'src/stores/postgres/driver/held-client.ts' },
  { rule: 'dialect-knows-no-driver', from: 'src/stores/postgres/dialect/migrations.ts', to: 'src/stores/postgres/store.ts' },
  { rule: 'cli-uses-stores-by-their-entry', from: 'src/cli/stats.ts', to: 'src/stores/postgres/operations.ts' },
  { rule: 'ops-subscribes', from: 'src/ops/recorder.ts', to: 'src/http/body.ts' },
  { rule: 'nothing-imports-the-outside', from: 'src/index.ts', to: 'test/fixtures/outside.ts' },
  // A circle, closed by CLOSING below: depcruise reports it once, at its first import.
  { rule: 'no-circular', from: 'src/data/memo.ts', to: 'src/data/upsert.ts' },
]
/** Imports that complete a planted violation and break no rule of their own. */
const CLOSING: { from: string; to: string }[] = [{ from: 'src/data/upsert.ts', to: 'src/data/memo.ts' }]

describe('the import rules (.dependency-cruiser.cjs)', () => {
  const probe = mkdtempSync(join(tmpdir(), 'idem-architecture-'))
  afterAll(() => rmSync(probe, { recursive: true, force: true }))

  it('hold for the library: no forbidden import, no circle', async () => {
    expect(await violations(root)).toEqual([])
  })

  it('plant a forbidden import for every rule', () => {
    const rules = (createRequire(import.meta.url)(config) as { forbidden: { name: string }[] }).forbidden.map((rule) => rule.name)
    expect([...new Set(PLANTED.map((plant) => plant.rule))].sort()).toEqual([...rules].sort())
  })

  it('each catch the import they forbid, and only that rule fires', async () => {
    const imports = new Map<string, string[]>()
    for (const { from, to } of [...PLANTED, ...CLOSING]) {
      imports.set(from, [...(imports.get(from) ?? []), to])
      imports.set(to, imports.get(to) ?? [])
    }
    for (const [path, targets] of imports) {
      const lines = targets.map((to, i) => `import * as m${i} from '${relative(path, to)}'\n`)
      const uses = targets.map((_, i) => `m${i}`)
      writeFile(join(probe, path), `${lines.join('')}export const value = [${uses.join(', ')}]\n`)
    }
    copyFileSync(join(root, 'tsconfig.json'), join(probe, 'tsconfig.json'))
    const found = (await violations(probe)).map((v) => `${v.rule.name}: ${v.from} → ${v.to}`).sort()
    expect(found).toEqual(PLANTED.map((plant) => `${plant.rule}: ${plant.from} → ${plant.to}`).sort())
  })
})

function writeFile(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true })
  writeFileSync(path, text)
}

/** The specifier `from` uses to import `to`, as the library writes it (`./x.js`, `../y/z.js`). */
function relative(from: string, to: string): string {
  const up = from.split('/').slice(0, -1)
  const down = to.split('/')
  let common = 0
  while (common < up.length && up[common] === down[common]) common++
  const path = [...up.slice(common).map(() => '..'), ...down.slice(common)].join('/').replace(/[.]ts$/, '.js')
  return path.startsWith('.') ? path : `./${path}`
}
