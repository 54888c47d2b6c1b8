// The leased protocols and the transactional claim as Promela models, checked by Spin:
// safety (assertions: no two holders' effects of a key both count, a fenced write never
// lands, a holder is refused only once its claim is gone, a replay is never another key's
// outcome), liveness (a crashed holder's key becomes claimable, under weak fairness), and
// broken variants that must each give a counterexample. Each model's header names the
// code it mirrors: leased.pml the Redis store (protocol v3), leased-token.pml the leases
// fenced by a token (SQL, DynamoDB, and Redis keys written by protocol v2).
import { execFileSync, spawnSync } from 'node:child_process'
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { FULL, report, scale } from './support/table.js'

const has = (command: string) => spawnSync('sh', ['-c', `command -v ${command}`]).status === 0
const tools = has('spin') && has('cc')
if (!tools && process.env.CI) throw new Error('Spin and a C compiler are required in CI (.ci/run installs spin)')
if (!tools) console.warn('SKIPPED: spin or cc is missing (apt-get install spin)')

const work = mkdtempSync(join(tmpdir(), 'idem-spin-'))
afterAll(() => rmSync(work, { recursive: true, force: true }))

interface Verdict {
  errors: number
  states: number
  depth: number
  output: string
  /** The counterexample, replayed by spin from the trail, when there is one. */
  trail?: string
}

/** Generates, compiles and runs the verifier of `model` in a folder of its own. */
function verify(model: string, { defines = [] as string[], cflags = [] as string[], run = [] as string[], optimize = '-O1' } = {}): Verdict {
  const dir = mkdtempSync(join(work, `${model}-`))
  const file = `${model}.pml`
  copyFileSync(fileURLToPath(new URL(`./models/${file}`, import.meta.url)), join(dir, file))
  const opts = { cwd: dir, encoding: 'utf8' as const, timeout: 300_000, maxBuffer: 64 * 1024 * 1024 }
  execFileSync('spin', [...defines, '-a', file], opts)
  execFileSync('cc', [optimize, '-w', ...cflags, '-o', 'pan', 'pan.c'], opts)
  const result = spawnSync('./pan', ['-m200000', ...run], opts)
  const output = `${result.stdout}${result.stderr}`
  const errors = Number(/errors: (\d+)/.exec(output)?.[1] ?? Number.NaN)
  const states = Number(/([\d.e+]+) states, stored/.exec(output)?.[1] ?? Number.NaN)
  const depth = Number(/depth reached (\d+)/.exec(output)?.[1] ?? Number.NaN)
  const verdict: Verdict = { errors, states, depth, output }
  if (errors > 0) verdict.trail = execFileSync('spin', [...defines, '-t', '-p', file], opts)
  return verdict
}

const safety = { cflags: ['-DNOCLAIM', '-DSAFETY'] }
const liveness = { cflags: ['-DNFAIR=3'], run: ['-a', '-f'] }
// A counterexample comes after a few hundred states: compiling is all its time.
const counterexample = { ...safety, optimize: '-O0' }
// Two claims per process: too many states to store whole on this machine, so a bitstate
// search (most states, not provably all) on top of the exhaustive one, in the full run.
const wide = { cflags: [...safety.cflags, '-DBITSTATE'], defines: ['-DCLAIMS=2'], run: ['-w30'], optimize: '-O2' }

interface Model {
  model: string
  /** Variants that break the protocol: each must give a counterexample, whose replay shows `violated`. */
  broken: ReadonlyArray<{ define: string; what: string; violated: RegExp }>
  /** What the full run adds: more processes' claims, or more of what the model leaves out. */
  full?: ReadonlyArray<{ what: string; options: Parameters<typeof verify>[1] }>
}

const models: Model[] = [
  {
    model: 'leased',
    broken: [
      { define: '-DFENCED=0', what: 'fencing removed', violated: /assertion violated/ },
      // The holder refused while its claim holds the key (the REFUSES assertion).
      { define: '-DEXACT=1', what: 'a renewal in the 3h form not sent again by claim id', violated: /text of failed assertion: assert\(!\(/ },
    ],
    full: [
      { what: '2 claims a process, bitstate', options: wide },
      { what: 'keys with steps expiring after their lease', options: { ...safety, defines: ['-DRETAIN=1'] } },
    ],
  },
  {
    model: 'leased-token',
    broken: [{ define: '-DFENCED=0', what: 'fencing removed', violated: /assertion violated/ }],
    full: [{ what: '2 claims a process, bitstate', options: wide }],
  },
  { model: 'transactional', broken: [{ define: '-DLOCKED=0', what: 'the lock removed', violated: /assertion violated/ }] },
]

describe.skipIf(!tools)('the protocols, model-checked by Spin (3 processes, crashes, stalls, delays)', () => {
  for (const { model, broken, full = [] } of models) {
    it(`${model}: safe, live, and broken with ${broken.map(({ what }) => what).join(', or ')}`, ({ task }) => {
      const safe = verify(model, safety)
      expect(safe.errors, safe.output).toBe(0)
      expect(safe.output).toContain('assertion violations\t+')
      const live = verify(model, liveness)
      expect(live.errors, live.output).toBe(0)
      expect(live.output).toContain('acceptance   cycles \t+ (fairness enabled)')
      let notes = `safety and liveness hold (${safe.states.toLocaleString('en-US')} states, depth ${safe.depth})`
      for (const { define, what, violated } of broken) {
        const found = verify(model, { ...counterexample, defines: [define] })
        expect(found.errors, found.output).toBe(1)
        expect(found.output).toMatch(/assertion violated/)
        expect(found.trail).toMatch(violated)
        notes += `; ${what}: counterexample at depth ${found.depth}`
      }
      let runs = safe.states + live.states
      for (const { what, options } of FULL ? full : []) {
        const more = verify(model, options)
        expect(more.errors, more.output).toBe(0)
        runs += more.states
        notes += `; ${what}: ${more.states.toLocaleString('en-US')} states, no error`
      }
      report(task, { scenario: `model: ${model} protocol (Spin)`, runs, unit: 'states', duplicates: 0, lost: 0, unexpected5xx: 0, notes })
    }, scale(600_000, 1_800_000))
  }
})
