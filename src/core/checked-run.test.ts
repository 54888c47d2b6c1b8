// Both engines' checked run (CHECKED_RUN): a call checked once by a front end, one
// tagged outcome back; and the decision each engine makes on its store's claim.
import { describe, expect, it } from 'vitest'
import { memoryLeasedStore, memoryStore } from '../stores/memory/index.js'
import { CHECKED_RUN, type CallOutcome, type CheckedCall, type CheckedRun, type Returned } from './call.js'
import { createIdem, decideClaim } from './engine.js'
import { FingerprintMismatchError } from './errors/fingerprint-mismatch.js'
import { InFlightError } from './errors/in-flight.js'
import { checkedKey, checkedScope } from './identity.js'
import { createLeasedIdem } from './leased/engine.js'
import { decideLease } from './leased/runner.js'
import { NO_STEPS, type Lease, type LeaseClaim } from '../ports/leased-store.js'
import type { Claim } from '../ports/key-store.js'

const call = (key: string, fingerprint = 'fp-1', waitMs = 0): CheckedCall => ({ scope: checkedScope('acct'), key: checkedKey(key), fingerprint, ttlMs: 60_000, waitMs, deadlineMs: 60_000 })
const store = (outcome: string, value: string): Returned<string> => ({ kind: 'store', outcome, value })

const engines: Array<[string, () => CheckedRun<unknown>]> = [
  ['transactional', () => createIdem({ store: memoryStore() })[CHECKED_RUN]],
  ['leased', () => createLeasedIdem({ store: memoryLeasedStore() })[CHECKED_RUN]],
]

describe.each(engines)('the %s engine’s checked run', (_, make) => {
  it('comes to one outcome per call: fresh with the front end’s value, then replayed, parsed from what was stored', async () => {
    const run = make()
    const first = await run(call('k1'), () => store('{"n":1}', 'its own value'))
    expect(first).toEqual({ kind: 'fresh', value: 'its own value', outcome: '{"n":1}' })
    expect(await run(call('k1'), () => store('{"n":2}', 'never'))).toEqual({ kind: 'replayed', value: { n: 1 } })
  })

  it('stores nothing for a discarded outcome: the next call runs again', async () => {
    const run = make()
    expect(await run(call('k2'), async () => ({ kind: 'discard', value: 'a transient failure' }) as const)).toEqual({ kind: 'not-stored', value: 'a transient failure' })
    expect((await run(call('k2'), async () => store('1', 'ran again'))).kind).toBe('fresh')
  })

  it('refuses without throwing: another request under the key, and the same one in flight, each with its error', async () => {
    const run = make()
    await run(call('k3'), () => store('1', 'first'))
    const mismatch = await run(call('k3', 'fp-other'), () => store('2', 'never'))
    expect(mismatch.kind === 'refused' && mismatch.error).toBeInstanceOf(FingerprintMismatchError)
    let release!: () => void
    let running!: () => void
    const started = new Promise<void>((resolve) => (running = resolve))
    const holding = run(call('k4'), () => {
      running()
      return new Promise<Returned<string>>((resolve) => (release = () => resolve(store('1', 'held'))))
    })
    await started
    const inFlight: CallOutcome<string> = await run(call('k4'), () => store('2', 'never'))
    expect(inFlight.kind === 'refused' && inFlight.error).toBeInstanceOf(InFlightError)
    expect(inFlight.kind === 'refused' && inFlight.error.retryAfterSeconds).toBe(1)
    release()
    expect((await holding).kind).toBe('fresh')
  })

  it('returns an idem error the function throws as refused, and throws anything else after letting the key go', async () => {
    const run = make()
    const refused = await run(call('k5'), () => {
      throw new InFlightError('a nested call was in flight')
    })
    expect(refused.kind === 'refused' && refused.error.message).toBe('a nested call was in flight')
    await expect(run(call('k6'), async () => Promise.reject(new Error('the function failed')))).rejects.toThrow('the function failed')
    expect((await run(call('k6'), () => store('1', 'retried'))).kind).toBe('fresh')
  })
})

const mine = 'fp-mine'
const record = { fingerprint: mine, outcome: '{"ok":true}' }
const theirs = { fingerprint: 'fp-theirs', outcome: '{"ok":false}' }
// decideLease never calls a lease: it hands the claim on as it is.
const lease: Lease = { renew: async () => false, saveStep: async () => false, complete: async () => false, release: async () => false, fencingToken: async () => undefined }

describe('decideClaim, on a transactional claim', () => {
  it('runs a new key, replays a record of the same request (with that record), refuses another request’s', () => {
    expect(decideClaim({ state: 'new' }, mine)).toEqual({ kind: 'run' })
    const decision = decideClaim({ state: 'found', record }, mine)
    expect(decision.kind === 'replay' && decision.record).toBe(record)
    expect(decideClaim({ state: 'found', record: theirs }, mine)).toEqual({ kind: 'mismatch' })
  })

  it('says a key locked past the wait is in flight, and asks again for one its snapshot cannot see', () => {
    expect(decideClaim({ state: 'locked' }, mine)).toEqual({ kind: 'in-flight' })
    expect(decideClaim({ state: 'stale' }, mine)).toEqual({ kind: 'retry' })
  })

  it('reads nothing but its arguments: the same claim, the same decision', () => {
    const claims: Claim[] = [{ state: 'new' }, { state: 'found', record }, { state: 'found', record: theirs }, { state: 'locked' }, { state: 'stale' }]
    for (const claim of claims) expect(decideClaim(claim, mine)).toEqual(decideClaim(claim, mine))
  })
})

describe('decideLease, on a leased claim', () => {
  it('runs an acquired key, handing on its lease and steps', () => {
    const claim: LeaseClaim = { state: 'acquired', lease, steps: new Map([['charge', '"ch_1"']]) }
    const decision = decideLease(claim, mine)
    expect(decision.kind === 'run' && decision.claim).toBe(claim)
    expect(decideLease({ state: 'acquired', lease, steps: NO_STEPS }, mine).kind).toBe('run')
  })

  it('replays a completed record of the same request, refuses another request’s, running or not', () => {
    expect(decideLease({ state: 'completed', record }, mine)).toEqual({ kind: 'replay', record })
    expect(decideLease({ state: 'completed', record: theirs }, mine)).toEqual({ kind: 'mismatch', running: false })
    expect(decideLease({ state: 'running', fingerprint: 'fp-theirs' }, mine)).toEqual({ kind: 'mismatch', running: true })
  })

  it('says the same request still running is in flight', () => {
    expect(decideLease({ state: 'running', fingerprint: mine }, mine)).toEqual({ kind: 'in-flight' })
  })
})
