// What `npm test` runs under each runtime (runtimes.test.ts): the slice (test/runtimes/slice)
// in one process, reported group by group, and the README's quickstart as a user runs it.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { conformanceCases } from '../http/support/cases.js'
import { REPORT_PREFIX, SLICE_GROUPS, type SliceReport } from './slice/plan.js'
import { expectPageShows, expectPageShowsOutput } from '../docs/support.js'
import { findRuntime, root, runOn, serveOn, type Ran, type RuntimeName } from './support.js'

// The whole slice: ~370 cases, the conformance table’s slowest rows and the contract suites’ expiries included.
const SLICE_TIMEOUT_MS = 240_000

interface GroupResult {
  planned?: number
  skipped?: string
  passed: string[]
  failed: Array<{ case: string; error: string }>
}

function readReport(ran: Ran): Map<string, GroupResult> {
  const groups = new Map<string, GroupResult>()
  for (const line of ran.stdout.split('\n')) {
    if (!line.startsWith(REPORT_PREFIX)) continue
    const entry = JSON.parse(line.slice(REPORT_PREFIX.length)) as SliceReport
    if ('done' in entry) continue
    const group = groups.get(entry.group) ?? { passed: [], failed: [] }
    groups.set(entry.group, group)
    if ('planned' in entry) group.planned = entry.planned
    else if ('skipped' in entry) group.skipped = entry.skipped
    else if (entry.ok) group.passed.push(entry.case)
    else group.failed.push({ case: entry.case, error: entry.error })
  }
  return groups
}

export function describeRuntime(name: RuntimeName): void {
  const runtime = findRuntime(name)
  // Started now, while the file is collected, so that every runtime's slice runs at once.
  const slice =
    runtime &&
    runOn(runtime, join(root, 'test/runtimes/slice/main.ts'), [], {
      env: { IDEM_RUNTIME_ARGV: JSON.stringify(runtime.argv) },
      timeoutMs: SLICE_TIMEOUT_MS,
    })
  describe.skipIf(runtime === undefined)(`${name}: the Web-standard front ends, the engines, the stores and the client`, () => {
    let ran: Ran
    let groups: Map<string, GroupResult>
    beforeAll(async () => {
      ran = await slice!
      groups = readReport(ran)
    }, SLICE_TIMEOUT_MS + 10_000)

    it(`runs the slice to its end (${runtime?.version})`, () => {
      expect(ran.stdout, `the slice ended (${ran.signal ?? ran.code}) before its last group; stderr:\n${ran.stderr}`).toContain(`${REPORT_PREFIX}{"done":true}`)
      expect(ran.code).toBe(0)
    })

    it(`the README's quickstart runs under \`${name === 'bun' ? 'bun' : 'deno run'}\` as under Node: one charge, then replays, also on a second run`, async () => {
      const dir = mkdtempSync(join(tmpdir(), `idem-quickstart-${name}-`))
      try {
        const env = { QUICKSTART_DB: join(dir, 'quickstart.db') }
        const first = await runOn(runtime!, join(root, 'examples/quickstart.mjs'), [], { env })
        expect(first.stderr).toBe('')
        expect(first.stdout).toBe('attempt 1: charge 1\nattempt 2: charge 1 (replayed)\nattempt 3: charge 1 (replayed)\ncharges in the table: 1\n')
        const again = await runOn(runtime!, join(root, 'examples/quickstart.mjs'), [], { env })
        expect(again.stdout).toBe('attempt 1: charge 1 (replayed)\nattempt 2: charge 1 (replayed)\nattempt 3: charge 1 (replayed)\ncharges in the table: 1\n')
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    })

    it(`the guide's app (docs/guides/${name}.md) serves, replays a retry and refuses a changed request, as the guide shows`, async () => {
      const guide = `docs/guides/${name}.md`
      expectPageShows(guide, 'examples/guides/hono-app.ts')
      const dir = mkdtempSync(join(tmpdir(), `idem-guide-${name}-`))
      const app = await serveOn(runtime!, join(root, 'examples/guides/hono-app.ts'), { ORDERS_DB: join(dir, 'orders.db') })
      try {
        const lines: string[] = []
        for (const amount of [1500, 1500, 9999]) {
          const response = await fetch(`${app.url}/orders`, {
            method: 'POST',
            headers: { authorization: 'Bearer acct_42', 'idempotency-key': '"order-1"', 'content-type': 'application/json' },
            body: JSON.stringify({ amount }),
          })
          const body = await response.text()
          const replayed = response.headers.get('idempotent-replayed') === 'true' ? ' (replayed)' : ''
          lines.push(`${response.status}${replayed} ${response.status === 422 ? (JSON.parse(body) as { code: string }).code : body}`)
        }
        expectPageShowsOutput(guide, lines.join('\n'))
        expect(lines).toEqual(['201 {"orderId":1,"amount":1500}', '201 (replayed) {"orderId":1,"amount":1500}', '422 fingerprint-mismatch'])
      } finally {
        await app.stop()
        rmSync(dir, { recursive: true, force: true })
      }
    })

    for (const groupName of SLICE_GROUPS) {
      it(groupName, (context) => {
        const group = groups.get(groupName)
        expect(group, `the slice reported nothing for this group; stderr:\n${ran.stderr}`).toBeDefined()
        if (group!.skipped !== undefined) {
          console.warn(`SKIPPED: ${name}: ${groupName}: ${group!.skipped}`)
          return context.skip()
        }
        expect(group!.failed.map(({ case: which, error }) => `${which}\n  ${error.replaceAll('\n', '\n  ')}`)).toEqual([])
        expect(group!.passed.length).toBe(group!.planned)
        if (groupName.startsWith('conformance: ')) expect(group!.planned).toBe(conformanceCases.length)
        else expect(group!.planned).toBeGreaterThan(0)
      })
    }
  })
}
