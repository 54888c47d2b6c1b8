// Fuzz, for configuration: every option of every function of the built package that takes
// options (the factories, and the options objects a call takes: `run`, `outbox.add`,
// `prune`, a backoff…), misspelt at random as people misspell them (letters flipped to
// the other case, dropped, doubled, swapped with the next), is refused where it is
// given: an `InvalidOptionError` naming the misspelt name and suggesting a known name
// at least as near as the intended one. Never accepted (the setting silently lost),
// never another error. 50,000 cases in `npm run chaos`, 2,000 in `npm test`.
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { load, openResources, TARGETS, type OptionTarget, type Resources } from '../support/factories.js'
import { report, scale } from './support/table.js'

const CASES = scale(2_000, 50_000)
const SEED = Number(process.env.IDEM_CHAOS_SEED ?? 20261201)

let r: Resources
let InvalidOptionError: new (...args: never[]) => Error
beforeAll(async () => {
  r = await openResources()
  InvalidOptionError = (await load('idem')).InvalidOptionError as typeof InvalidOptionError
})
afterAll(() => r?.close())

type Outcome = { made: unknown; error?: undefined } | { error: unknown }

async function attempt(target: OptionTarget, fn: unknown, options: Record<string, unknown>): Promise<Outcome> {
  try {
    const made = await target.call(fn, options, r)
    if (made !== undefined) await target.dispose?.(made)
    return { made }
  } catch (error) {
    return { error }
  }
}

/** Every option name the target takes, as its refusal of an unknown one lists them. */
async function knownNames(target: OptionTarget, fn: unknown): Promise<string[]> {
  const outcome = await attempt(target, fn, { ...target.minimal(r), notAnOptionOfAnyFactory: 1 })
  const listed = outcome.error instanceof InvalidOptionError ? /\(known: ([^)]*)\)$/.exec(outcome.error.message) : null
  if (listed === null) throw new Error(`${target.export}: an unknown option was not refused with the known ones listed`)
  return listed[1]!.split(', ')
}

// Levenshtein distance, case-insensitive: the measure a suggestion is judged by.
function distance(a: string, b: string): number {
  const [x, y] = [a.toLowerCase(), b.toLowerCase()]
  let previous = Array.from({ length: y.length + 1 }, (_, i) => i)
  for (let i = 1; i <= x.length; i++) {
    const current = [i]
    for (let j = 1; j <= y.length; j++) current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (x[i - 1] === y[j - 1] ? 0 : 1))
    previous = current
  }
  return previous[y.length]!
}

type Mistake = { kind: 'case' | 'drop' | 'double' | 'swap'; at: number; flips: number[] }

/** One misspelling: an edit at `at`, plus letters turned to the other case. */
function misspell(name: string, { kind, at, flips }: Mistake): string {
  const i = at % name.length
  let spelt = name
  if (kind === 'drop') spelt = name.slice(0, i) + name.slice(i + 1)
  if (kind === 'double') spelt = name.slice(0, i + 1) + name.slice(i)
  if (kind === 'swap' && name.length > 1) {
    const j = Math.min(i, name.length - 2)
    spelt = name.slice(0, j) + name[j + 1] + name[j] + name.slice(j + 2)
  }
  const letters = [...spelt]
  for (const flip of kind === 'case' ? [at, ...flips] : flips) {
    const k = flip % letters.length
    const letter = letters[k]!
    letters[k] = letter === letter.toLowerCase() ? letter.toUpperCase() : letter.toLowerCase()
  }
  return letters.join('')
}

const label = (target: OptionTarget) => `${target.entry} ${target.export}${target.part === undefined ? '' : ` → ${target.part}`}`

describe('fuzz: misspelt options', () => {
  it(`${CASES.toLocaleString('en-US')} misspellings of every option of every factory: each refused, naming it`, async ({ task }) => {
    const functions = await Promise.all(TARGETS.map(async (target) => (await load(target.entry))[target.export]))
    const names = await Promise.all(TARGETS.map((target, i) => knownNames(target, functions[i])))
    const options = TARGETS.flatMap((target, t) => names[t]!.map((name) => ({ t, name })))
    let cases = 0
    let refused = 0
    let intended = 0
    let collided = 0
    let accepted = 0
    let crashes = 0
    const mistake = fc.record({
      kind: fc.constantFrom<Mistake['kind']>('case', 'drop', 'double', 'swap'),
      at: fc.nat(),
      flips: fc.array(fc.nat(), { maxLength: 3 }),
    })
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...options), mistake, async ({ t, name }, how) => {
        cases++
        const target = TARGETS[t]!
        const known = names[t]!
        const wrong = misspell(name, how)
        // Spelt into another option's name (or back into its own): not a misspelling to refuse.
        if (known.includes(wrong)) {
          collided++
          return
        }
        const given = target.minimal(r)
        const value = name in given ? given[name] : 1
        delete given[name]
        const outcome = await attempt(target, functions[t], { ...given, [wrong]: value })
        const where = `${label(target)}: "${name}" spelt "${wrong}"`
        if (outcome.error === undefined) {
          accepted++
          expect.fail(`${where} was accepted`)
        }
        const message = outcome.error instanceof InvalidOptionError ? outcome.error.message : undefined
        if (message === undefined || !message.startsWith(`${target.caller}: "${wrong}" is not an option; did you mean "`)) {
          crashes++
          expect.fail(`${where}: ${String(outcome.error)}`)
        }
        const suggested = /did you mean "([^"]*)"\?/.exec(message)![1]!
        expect(known, where).toContain(suggested)
        expect(distance(wrong, suggested), where).toBeLessThanOrEqual(distance(wrong, name))
        refused++
        if (suggested === name) intended++
      }),
      { numRuns: CASES, seed: SEED + 10 },
    )
    report(task, {
      scenario: 'fuzz: misspelt options of every factory',
      runs: cases,
      unit: 'cases',
      duplicates: 0,
      lost: accepted,
      unexpected5xx: 0,
      crashes,
      notes:
        `${options.length} options of ${TARGETS.length} factories and call options; ${refused} refused naming the misspelling, ` +
        `${intended} suggesting the intended name${refused > intended ? `, ${refused - intended} another as near` : ''}; ${collided} spelt into a real name (skipped)`,
    })
  }, 600_000)
})
