// A misspelt option fails at creation, naming it and the option it was meant to be,
// whatever the factory: every exported function of every entry point of the built
// package (what a user imports) either takes an options object and refuses a name it
// does not know, or is listed as taking none. A new export that is in neither list
// fails here, so a new factory cannot skip the check.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ENTRY_POINTS, load, NOT_FACTORIES, openResources, TARGETS, type OptionTarget, type Resources } from '../support/factories.js'

let r: Resources
let InvalidOptionError: new (...args: never[]) => Error
beforeAll(async () => {
  r = await openResources()
  InvalidOptionError = (await load('idem')).InvalidOptionError as typeof InvalidOptionError
})
afterAll(() => r?.close())

/** Calls the target and settles: what it made (awaited), or what it threw. */
async function attempt(target: OptionTarget, options: Record<string, unknown>): Promise<{ made?: unknown; error?: unknown }> {
  const fn = (await load(target.entry))[target.export]
  try {
    return { made: await target.call(fn, options, r) }
  } catch (error) {
    return { error }
  }
}

/** The minimal options with `wrong` in place of `right` (or added, when the minimal options lack it). */
function misspelt(target: OptionTarget, wrong: string, right: string | null): Record<string, unknown> {
  const options = target.minimal(r)
  const value = right !== null && right in options ? options[right] : 1
  if (right !== null) delete options[right]
  return { ...options, [wrong]: value }
}

const label = (target: OptionTarget) => `${target.entry} ${target.export}${target.part === undefined ? '' : ` → ${target.part}`}`

describe('options', () => {
  it('every exported function is a target of this test, or listed as taking no options object', async () => {
    const targeted = new Set(TARGETS.map((t) => `${t.entry}#${t.export}`))
    const unclassified: string[] = []
    const both: string[] = []
    const exported = new Set<string>()
    for (const entry of ENTRY_POINTS) {
      for (const [name, value] of Object.entries(await load(entry))) {
        if (typeof value !== 'function') continue
        const id = `${entry}#${name}`
        exported.add(id)
        if (!targeted.has(id) && NOT_FACTORIES[id] === undefined) unclassified.push(id)
        if (targeted.has(id) && NOT_FACTORIES[id] !== undefined) both.push(id)
      }
    }
    expect(unclassified, 'exported functions neither tested for a misspelt option nor listed in NOT_FACTORIES').toEqual([])
    expect(both).toEqual([])
    // No stale entries: everything listed is exported.
    expect([...targeted, ...Object.keys(NOT_FACTORIES)].filter((id) => !exported.has(id))).toEqual([])
  })

  for (const target of TARGETS) {
    it(`${label(target)}: accepts its minimal options, refuses ${target.typos.map(([wrong]) => `"${wrong}"`).join(', ')}`, async () => {
      const accepted = await attempt(target, target.minimal(r))
      expect(accepted.error, 'the minimal options are valid').not.toBeInstanceOf(InvalidOptionError)
      if (accepted.made !== undefined) await target.dispose?.(accepted.made)
      for (const [wrong, right] of target.typos) {
        const refused = await attempt(target, misspelt(target, wrong, right))
        if (refused.made !== undefined) await target.dispose?.(refused.made)
        expect(refused.error, `${label(target)} accepted "${wrong}"`).toBeInstanceOf(InvalidOptionError)
        const message = (refused.error as Error).message
        const hint = right === null ? ' (known: ' : `; did you mean "${right}"?`
        expect(message).toContain(`${target.caller}: "${wrong}" is not an option${hint}`)
      }
    })
  }
})
