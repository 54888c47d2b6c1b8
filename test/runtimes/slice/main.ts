// The slice of the suite that runs under Bun and Deno, in one process per runtime:
// started by test/runtimes/bun.test.ts and deno.test.ts (`bun main.ts`, `deno run … main.ts`),
// it runs every group of plan.ts in order and reports each case on stdout.
import { clientGroup } from './client.js'
import { conformanceGroups } from './conformance.js'
import { contractGroups } from './contracts.js'
import { dataGroup } from './data.js'
import { leasedCrashGroup } from './leased-crash.js'
import { sqliteGroup } from './sqlite.js'
import { REPORT_PREFIX, SLICE_GROUPS, type SliceReport } from './plan.js'

/** One case: a name and what must hold (it throws otherwise). */
export interface SliceCase {
  name: string
  run(): Promise<void> | void
}

/** What a group needs set up: its cases, and what to undo after them. */
export interface OpenGroup {
  cases: SliceCase[]
  close(): Promise<void>
}

/** A group of cases; `open` resolves with `skipped` when a service is unreachable outside CI. */
export interface SliceGroup {
  name: string
  open(): Promise<OpenGroup | { skipped: string }>
}

const CASE_TIMEOUT_MS = 60_000

function report(line: SliceReport): void {
  process.stdout.write(`${REPORT_PREFIX}${JSON.stringify(line)}\n`)
}

function describeError(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}${error.stack ? `\n${error.stack.split('\n').slice(1, 6).join('\n')}` : ''}`
  return String(error)
}

async function withTimeout(work: Promise<void> | void, what: string): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no result within ${CASE_TIMEOUT_MS} ms`)), CASE_TIMEOUT_MS)
  })
  try {
    await Promise.race([work, timeout])
  } finally {
    clearTimeout(timer)
  }
}

const groups: SliceGroup[] = [...conformanceGroups(), ...contractGroups(), leasedCrashGroup, clientGroup, sqliteGroup, dataGroup]
const unplanned = groups.map((g) => g.name).filter((name) => !SLICE_GROUPS.includes(name))
if (unplanned.length > 0) throw new Error(`groups missing from plan.ts: ${unplanned.join(', ')}`)

/** Runs one group's cases in order, reporting each. */
async function runGroup(group: SliceGroup): Promise<void> {
  let opened: OpenGroup | { skipped: string }
  try {
    opened = await group.open()
  } catch (error) {
    report({ group: group.name, planned: 1 })
    report({ group: group.name, case: '(set-up)', ok: false, error: describeError(error) })
    return
  }
  if ('skipped' in opened) {
    report({ group: group.name, skipped: opened.skipped })
    return
  }
  report({ group: group.name, planned: opened.cases.length })
  for (const { name, run } of opened.cases) {
    const started = performance.now()
    try {
      await withTimeout(run(), name)
      report({ group: group.name, case: name, ok: true, ms: Math.round(performance.now() - started) })
    } catch (error) {
      report({ group: group.name, case: name, ok: false, error: describeError(error) })
    }
  }
  try {
    await opened.close()
  } catch (error) {
    report({ group: group.name, case: '(tear-down)', ok: false, error: describeError(error) })
  }
}

// IDEM_SLICE_ONLY=<start of a group's name> runs only the groups it names (by hand, while working on one).
const only = process.env.IDEM_SLICE_ONLY
// One group after the other: side by side, the contract suites' 16 MiB outcomes block the
// event loop for long enough that another group's leases and Redis timeouts run out.
for (const group of groups) if (only === undefined || group.name.startsWith(only)) await runGroup(group)
report({ done: true })
// Pools and clients a failed case left open must not keep the process alive.
process.exit(0)
