import { describe, expect, it } from 'vitest'
import { decide } from './decide.js'
import { NO_STEPS, type Lease, type LeaseClaim } from './leased/store.js'
import type { Claim } from './store.js'

const mine = 'fp-mine'
const record = { fingerprint: mine, outcome: '{"ok":true}' }
const theirs = { fingerprint: 'fp-theirs', outcome: '{"ok":false}' }
// decide never calls a lease: it hands the claim on as it is.
const lease: Lease = {
  renew: async () => false,
  saveStep: async () => false,
  complete: async () => false,
  release: async () => false,
  fencingToken: async () => undefined,
}

describe('decide, on a transactional claim', () => {
  it('runs a new key', () => {
    expect(decide({ state: 'new' }, mine)).toEqual({ kind: 'run', claim: { state: 'new' } })
  })

  it('replays a record of the same request, with that record', () => {
    const decision = decide({ state: 'found', record }, mine)
    expect(decision).toEqual({ kind: 'replay', record })
    expect(decision.kind === 'replay' && decision.record).toBe(record)
  })

  it('refuses a record of another request, which no longer runs', () => {
    expect(decide({ state: 'found', record: theirs }, mine)).toEqual({ kind: 'mismatch', running: false })
  })

  it('says a key locked past the wait is in flight', () => {
    expect(decide({ state: 'locked' }, mine)).toEqual({ kind: 'in-flight' })
  })

  it('asks again for a key whose record the snapshot cannot see', () => {
    expect(decide({ state: 'stale' }, mine)).toEqual({ kind: 'retry' })
  })

  it('reads nothing but its arguments: the same claim, the same decision', () => {
    const claims: Claim[] = [{ state: 'new' }, { state: 'found', record }, { state: 'found', record: theirs }, { state: 'locked' }, { state: 'stale' }]
    for (const claim of claims) expect(decide(claim, mine)).toEqual(decide(claim, mine))
  })
})

describe('decide, on a leased claim', () => {
  it('runs an acquired key, handing on its lease and steps', () => {
    const claim: LeaseClaim = { state: 'acquired', lease, steps: new Map([['charge', '"ch_1"']]) }
    const decision = decide(claim, mine)
    expect(decision.kind).toBe('run')
    expect(decision.kind === 'run' && decision.claim).toBe(claim)
  })

  it('runs a fresh acquired key with no steps', () => {
    const claim: LeaseClaim = { state: 'acquired', lease, steps: NO_STEPS }
    expect(decide(claim, mine)).toEqual({ kind: 'run', claim })
  })

  it('replays a completed record of the same request', () => {
    expect(decide({ state: 'completed', record }, mine)).toEqual({ kind: 'replay', record })
  })

  it('refuses a completed record of another request', () => {
    expect(decide({ state: 'completed', record: theirs }, mine)).toEqual({ kind: 'mismatch', running: false })
  })

  it('says the same request still running is in flight', () => {
    expect(decide({ state: 'running', fingerprint: mine }, mine)).toEqual({ kind: 'in-flight' })
  })

  it('refuses another request while it still runs', () => {
    expect(decide({ state: 'running', fingerprint: 'fp-theirs' }, mine)).toEqual({ kind: 'mismatch', running: true })
  })
})
