// The leased protocol and the transactional claim as Promela models, checked by Spin:
// safety (assertions: no two holders' effects of a key both count, a fenced write never
// lands, a replay is never another key's outcome), liveness (a crashed holder's key
// becomes claimable, under weak fairness), and a broken variant of each that must give
// a counterexample. Each model's header names the code it mirrors.
import { execFileSync, spawnSync } from 'node:child_process'
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { FULL, report } from './support/table.js'

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
function verify(model: string, { defines = [] as string[], cflags = [] as string[], run = [] as string[] } = {}): Verdict {
  const dir = mkdtempSync(join(work, `${model}-`))
  const file = `${model}.pml`
  copyFileSync(fileURLToPath(new URL(`./models/${file}`, import.meta.url)), join(dir, file))
  const opts = { cwd: dir, encoding: 'utf8' as const, timeout: 300_000, maxBuffer: 64 * 1024 * 1024 }
  execFileSync('spin', [...defines, '-a', file], opts)
  execFileSync('cc', ['-O2', '-w', ...cflags, '-o', 'pan', 'pan.c'], opts)
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

const models = [
  { model: 'leased', broken: '-DFENCED=0', what: 'fencing removed', violated: /assertion violated/ },
  { model: 'transactional', broken: '-DLOCKED=0', what: 'the lock removed', violated: /assertion violated/ },
]

describe.skipIf(!tools)('the protocols, model-checked by Spin (3 processes, crashes, stalls, delays)', () => {
  for (const { model, broken, what, violated } of models) {
    it(`${model}: safe, live, and broken without ${what.replace(' removed', '')}`, ({ task }) => {
      const safe = verify(model, safety)
      expect(safe.errors, safe.output).toBe(0)
      expect(safe.output).toContain('assertion violations\t+')
      const live = verify(model, liveness)
      expect(live.errors, live.output).toBe(0)
      expect(live.output).toContain('acceptance   cycles \t+ (fairness enabled)')
      const counterexample = verify(model, { ...safety, defines: [broken] })
      expect(counterexample.errors, counterexample.output).toBe(1)
      expect(counterexample.output).toMatch(violated)
      expect(counterexample.trail).toMatch(/assertion violated/)
      let notes = `safety and liveness hold (${safe.states.toLocaleString('en-US')} states, depth ${safe.depth}); ${what}: counterexample at depth ${counterexample.depth}`
      let runs = safe.states + live.states
      if (FULL && model === 'leased') {
        // Two claims per process: too many states to store whole on this machine, so a
        // bitstate search (most states, not provably all) on top of the exhaustive one.
        const wide = verify(model, { cflags: [...safety.cflags, '-DBITSTATE'], defines: ['-DCLAIMS=2'], run: ['-w30'] })
        expect(wide.errors, wide.output).toBe(0)
        runs += wide.states
        notes += `; 2 claims a process, bitstate: ${wide.states.toLocaleString('en-US')} states, no error`
      }
      report(task, { scenario: `model: ${model} protocol (Spin)`, runs, unit: 'states', duplicates: 0, lost: 0, unexpected5xx: 0, notes })
    }, 600_000)
  }
})
