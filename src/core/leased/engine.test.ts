import { randomUUID } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import {
  createLeasedIdem,
  deriveKey,
  discard,
  FingerprintMismatchError,
  InFlightError,
  InvalidKeyError,
  InvalidOptionError,
  LeaseLostError,
  OutcomeNotSerializableError,
  OutcomeTooLargeError,
  OverranError,
  StoreUnavailableError,
  type Lease,
  type LeasedIdem,
  type LeasedStore,
  type OutcomeEvent,
  type StepContext,
} from '../../index.js'
import { memoryLeasedStore } from '../../stores/memory/index.js'
import { latch, sleep } from '../../../test/leased/support.js'

const fresh = (label: string): string => `${label}-${randomUUID()}`

/** Starts a call of `key` (input 1) that holds it, returning 'first', until `hold` opens; resolves once it runs. */
async function holdingFirstCall(idem: LeasedIdem, key: string) {
  const hold = latch()
  const started = latch()
  const first = idem.run({ scope: 'acct', key, input: 1 }, async () => {
    started.open()
    await hold.wait
    return 'first'
  })
  await started.wait
  return { first, hold }
}

/** What `spied` may replace: the claim, and the writes through every lease it hands back. */
type Overrides = Partial<Pick<LeasedStore, 'claim'> & Pick<Lease, 'renew' | 'saveStep' | 'complete' | 'release'>>

/** A store whose claims, and the writes through the leases they hand back, can be watched and changed, one method at a time. */
function spied(inner: LeasedStore, overrides: Overrides = {}) {
  const calls: Array<{ method: string; result: unknown }> = []
  const record = async <T>(method: string, call: () => Promise<T>): Promise<T> => {
    const result = await call()
    calls.push({ method, result })
    return result
  }
  const watched = (lease: Lease): Lease => ({
    renew: (leaseMs) => record('renew', () => (overrides.renew ?? lease.renew.bind(lease))(leaseMs)),
    saveStep: (name, result) => record('saveStep', () => (overrides.saveStep ?? lease.saveStep.bind(lease))(name, result)),
    complete: (outcome, ttlMs) => record('complete', () => (overrides.complete ?? lease.complete.bind(lease))(outcome, ttlMs)),
    release: () => record('release', () => (overrides.release ?? lease.release.bind(lease))()),
    fencingToken: () => record('fencingToken', () => lease.fencingToken()),
  })
  const store: LeasedStore = {
    name: 'spied',
    maxOutcomeBytes: inner.maxOutcomeBytes,
    async claim(...args) {
      const claim = await record('claim', () => (overrides.claim ?? inner.claim.bind(inner))(...args))
      return claim.state === 'acquired' ? { ...claim, lease: watched(claim.lease) } : claim
    },
  }
  return { store, calls, count: (method: string) => calls.filter((c) => c.method === method).length }
}

describe('leased engine', () => {
  it('runs once and replays: same shape as the transactional engine', async () => {
    const idem = createLeasedIdem({ store: memoryLeasedStore() })
    const key = fresh('replay')
    let runs = 0
    const fn = async () => {
      runs++
      return { at: new Date(0), items: ['a'] }
    }
    const first = await idem.run({ scope: 'acct', key, input: { amount: 1 } }, fn)
    const second = await idem.run({ scope: 'acct', key, input: { amount: 1 } }, fn)
    expect(first).toEqual({ value: { at: '1970-01-01T00:00:00.000Z', items: ['a'] }, replayed: false, stored: true })
    expect(second).toEqual({ ...first, replayed: true })
    expect(runs).toBe(1)
  })

  it('a different request with the same key is a mismatch, at once, even while the first still runs', async () => {
    const idem = createLeasedIdem({ store: memoryLeasedStore(), waitMs: 30_000 })
    const key = fresh('mismatch')
    const { first, hold } = await holdingFirstCall(idem, key)
    let ran = false
    // waitMs is long: a mismatch must not wait for the first call.
    await expect(idem.run({ scope: 'acct', key, input: 2 }, async () => (ran = true))).rejects.toThrow(FingerprintMismatchError)
    hold.open()
    await first
    await expect(idem.run({ scope: 'acct', key, input: 2 }, async () => (ran = true))).rejects.toThrow(FingerprintMismatchError)
    expect(ran).toBe(false)
  })

  it('a duplicate gets InFlightError when it will not wait, and polls then replays when it will', async () => {
    const idem = createLeasedIdem({ store: memoryLeasedStore() })
    const key = fresh('inflight')
    const { first, hold } = await holdingFirstCall(idem, key)
    await expect(idem.run({ scope: 'acct', key, input: 1, waitMs: 0 }, async () => 'x')).rejects.toSatisfy(
      (error) => error instanceof InFlightError && error.retryAfterSeconds === 1,
    )
    await expect(idem.run({ scope: 'acct', key, input: 1, waitMs: 60 }, async () => 'x')).rejects.toThrow(InFlightError)
    const waiting = idem.run({ scope: 'acct', key, input: 1, waitMs: 10_000 }, async () => 'second')
    await sleep(50)
    hold.open()
    expect(await first).toEqual({ value: 'first', replayed: false, stored: true })
    expect(await waiting).toEqual({ value: 'first', replayed: true, stored: true })
  })

  it('the heartbeat keeps a long call its key: no takeover, signal not aborted', async () => {
    const spy = spied(memoryLeasedStore())
    const idem = createLeasedIdem({ store: spy.store, leaseMs: 300, heartbeatMs: 50 })
    const key = fresh('heartbeat')
    let signal!: AbortSignal
    const first = idem.run({ scope: 'acct', key, input: 1 }, async (ctx) => {
      signal = ctx.signal
      await sleep(1_000)
      return 'long'
    })
    await sleep(700) // well past the first lease
    await expect(idem.run({ scope: 'acct', key, input: 1, waitMs: 0 }, async () => 'dup')).rejects.toThrow(InFlightError)
    expect(await first).toEqual({ value: 'long', replayed: false, stored: true })
    expect(signal.aborted).toBe(false)
    expect(spy.count('renew')).toBeGreaterThan(3)
  })

  it('a holder whose event loop was blocked past its lease starts no new step, though no timer fired', async () => {
    const spy = spied(memoryLeasedStore())
    const idem = createLeasedIdem({ store: spy.store, leaseMs: 100 })
    let secondRan = false
    const run = idem.run({ scope: 'acct', key: fresh('blocked'), input: 1 }, async (ctx) => {
      await ctx.step('first', () => 1)
      // Synchronous: no heartbeat and no deadline timer can run meanwhile.
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 250)
      await ctx.step('second', () => {
        secondRan = true
        return 2
      })
      return 'done'
    })
    await expect(run).rejects.toBeInstanceOf(LeaseLostError)
    expect(secondRan).toBe(false)
    expect(spy.count('complete')).toBe(0)
  })

  it('steps persist before returning; a takeover resumes after the last completed step', async () => {
    const store = memoryLeasedStore()
    const spy = spied(store)
    const idem = createLeasedIdem({ store: spy.store, leaseMs: 100, heartbeatMs: 30, waitMs: 5_000 })
    const key = fresh('resume')
    const charges: string[] = []
    const body = (crashAfterCharge: boolean) => async (ctx: Parameters<Parameters<typeof idem.run>[1]>[0]) => {
      const charge = await ctx.step('charge', async () => {
        charges.push(ctx.derive('charge'))
        return { id: `ch_${charges.length}`, at: new Date(0) }
      })
      expect(charge).toEqual({ id: 'ch_1', at: '1970-01-01T00:00:00.000Z' }) // the JSON form, first run and resume alike
      expect(spy.calls.some((c) => c.method === 'saveStep' && c.result === true)).toBe(true)
      if (crashAfterCharge) throw new Error('crash after the charge')
      const again = await ctx.step('charge', async () => charges.push('twice'))
      const email = await ctx.step('email', async () => `receipt for ${charge.id}`)
      return { charge: again, email }
    }
    await expect(idem.run({ scope: 'acct', key, input: 1 }, body(true))).rejects.toThrow('crash after the charge')
    // With a completed step the claim is kept: a duplicate that will not wait is in flight.
    await expect(idem.run({ scope: 'acct', key, input: 1, waitMs: 0 }, body(false))).rejects.toThrow(InFlightError)
    // A different request cannot take the steps over.
    await expect(idem.run({ scope: 'acct', key, input: 2 }, body(false))).rejects.toThrow(FingerprintMismatchError)
    const result = await idem.run({ scope: 'acct', key, input: 1 }, body(false))
    expect(result.value).toEqual({ charge: { id: 'ch_1', at: '1970-01-01T00:00:00.000Z' }, email: 'receipt for ch_1' })
    expect(charges).toEqual([deriveKey('acct', key, 'charge')])
  })

  it('a failure with no completed step releases the claim: the retry runs at once, with any request', async () => {
    const idem = createLeasedIdem({ store: memoryLeasedStore() })
    const key = fresh('release')
    await expect(
      idem.run({ scope: 'acct', key, input: 1 }, async () => {
        throw new Error('provider said no')
      }),
    ).rejects.toThrow('provider said no')
    expect(await idem.run({ scope: 'acct', key, input: 2, waitMs: 0 }, async () => 'second')).toEqual({
      value: 'second',
      replayed: false,
      stored: true,
    })
  })

  it("onError 'keep' leaves the claim held until its lease runs out", async () => {
    const idem = createLeasedIdem({ store: memoryLeasedStore(), onError: 'keep', leaseMs: 150, heartbeatMs: 50 })
    const key = fresh('keep')
    await expect(
      idem.run({ scope: 'acct', key, input: 1 }, async () => {
        throw new Error('in doubt')
      }),
    ).rejects.toThrow('in doubt')
    await expect(idem.run({ scope: 'acct', key, input: 1, waitMs: 0 }, async () => 'x')).rejects.toThrow(InFlightError)
    expect((await idem.run({ scope: 'acct', key, input: 1, waitMs: 5_000 }, async () => 'after')).value).toBe('after')
  })

  it('a call still running at deadlineMs: OverranError, the signal aborts, the lease is released, no late step runs, nothing is stored', async () => {
    const { store, count } = spied(memoryLeasedStore())
    const kinds: string[] = []
    const idem = createLeasedIdem({ store, leaseMs: 60, heartbeatMs: 20, deadlineMs: 100, onOutcome: (event) => kinds.push(event.kind) })
    const key = fresh('overran')
    const hold = latch()
    const lateDone = latch()
    let signal: AbortSignal | undefined
    let late: unknown
    const first = idem.run({ scope: 'acct', key, input: 1 }, async (ctx) => {
      signal = ctx.signal
      await hold.wait
      late = await ctx.step('email', () => 'sent').catch((error: unknown) => error)
      lateDone.open()
      return 'first'
    })
    const error = await first.catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(OverranError)
    expect(signal?.aborted).toBe(true)
    expect(signal?.reason).toBe(error)
    // Released at the deadline. (That a long call renews its lease is the heartbeat test's;
    // here a stalled event loop may let the deadline come before the first heartbeat.)
    expect(count('release')).toBe(1)
    const renewals = count('renew')
    expect(await idem.run({ scope: 'acct', key, input: 1, waitMs: 0 }, async () => 'retry')).toMatchObject({ value: 'retry', replayed: false })
    hold.open()
    await lateDone.wait
    expect(late).toBe(error)
    expect(count('renew')).toBe(renewals)
    expect(count('saveStep')).toBe(0)
    expect(kinds).toEqual(['overran', 'fresh'])
  })

  it('a call whose lease was lost and that never settles is still answered at deadlineMs (OverranError), not left waiting', async () => {
    // Renewals fail, as when the holder cannot reach the store: the lease is lost after leaseMs.
    const { store } = spied(memoryLeasedStore(), { renew: async () => Promise.reject(new Error('unreachable')) })
    const idem = createLeasedIdem({ store, leaseMs: 60, heartbeatMs: 20, deadlineMs: 200 })
    let signal: AbortSignal | undefined
    // Before the fix the call never settled, and this test ran into its time limit.
    const error = await idem
      .run({ scope: 'acct', key: fresh('lost-then-stuck'), input: 1 }, (ctx) => {
        signal = ctx.signal
        return new Promise<never>(() => {})
      })
      .catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(OverranError)
    expect(signal?.reason).toBeInstanceOf(LeaseLostError)
  }, 10_000)

  it('a discarded outcome is returned unstored and the claim released', async () => {
    const idem = createLeasedIdem({ store: memoryLeasedStore() })
    const key = fresh('not-stored')
    let runs = 0
    const fn = async () => {
      const value = { transient: true, run: ++runs }
      return value.transient ? discard(value) : value
    }
    expect(await idem.run({ scope: 'acct', key, input: 1 }, fn)).toEqual({ value: { transient: true, run: 1 }, replayed: false, stored: false })
    expect((await idem.run({ scope: 'acct', key, input: 1, waitMs: 0 }, fn)).value).toEqual({ transient: true, run: 2 })
  })

  it('an unstorable outcome or step result is refused with OutcomeNotSerializableError', async () => {
    const idem = createLeasedIdem({ store: memoryLeasedStore() })
    await expect(idem.run({ scope: 'acct', key: fresh('bad-outcome'), input: 1 }, async () => ({ n: 1n }))).rejects.toThrow(
      OutcomeNotSerializableError,
    )
    await expect(
      idem.run({ scope: 'acct', key: fresh('bad-step'), input: 1 }, async (ctx) => ctx.step('s', async () => new Map())),
    ).rejects.toThrow(OutcomeNotSerializableError)
  })

  it('concurrent calls of one step name share a single run', async () => {
    const idem = createLeasedIdem({ store: memoryLeasedStore() })
    let runs = 0
    const { value } = await idem.run({ scope: 'acct', key: fresh('shared-step'), input: 1 }, async (ctx) => {
      const step = () =>
        ctx.step('once', async () => {
          runs++
          await sleep(20)
          return runs
        })
      return Promise.all([step(), step(), step()])
    })
    expect(value).toEqual([1, 1, 1])
    expect(runs).toBe(1)
  })

  it('derive gives a stable 64-hex key per (scope, key, name), the same as deriveKey', async () => {
    const idem = createLeasedIdem({ store: memoryLeasedStore() })
    const key = fresh('derive')
    const { value } = await idem.run({ scope: 'acct', key, input: 1 }, async (ctx) => [ctx.derive('charge'), ctx.derive('email')])
    expect(value[0]).toMatch(/^[0-9a-f]{64}$/)
    expect(value[0]).toBe(deriveKey('acct', key, 'charge'))
    expect(value[1]).not.toBe(value[0])
    expect(deriveKey('acct', key, 'charge')).not.toBe(deriveKey('acct2', key, 'charge'))
    expect(deriveKey('a:b', 'c', 'n')).not.toBe(deriveKey('a', 'b:c', 'n'))
  })

  describe('a holder that lost its lease', () => {
    it('renewal refused (fenced): the signal aborts, new steps do not run, and completion is refused', async () => {
      const spy = spied(memoryLeasedStore(), { renew: async () => false })
      const kinds: string[] = []
      const idem = createLeasedIdem({ store: spy.store, leaseMs: 90, heartbeatMs: 30, onOutcome: (e) => kinds.push(e.kind) })
      let reason: unknown
      let ranAfter = false
      const call = idem.run({ scope: 'acct', key: fresh('fenced'), input: 1 }, async (ctx) => {
        await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve))
        reason = ctx.signal.reason
        await ctx.step('after', async () => (ranAfter = true)).catch(() => {})
        return 'zombie'
      })
      await expect(call).rejects.toThrow(LeaseLostError)
      expect(reason).toBeInstanceOf(LeaseLostError)
      expect(ranAfter).toBe(false)
      // Known to be fenced: no write is even attempted.
      expect(spy.count('complete')).toBe(0)
      expect(spy.count('saveStep')).toBe(0)
      expect(kinds).toEqual(['lease-lost'])
    })

    it('a step refused after the lease was lost fails the call as lease-lost', async () => {
      const spy = spied(memoryLeasedStore(), { renew: async () => false })
      const kinds: string[] = []
      const idem = createLeasedIdem({ store: spy.store, leaseMs: 90, heartbeatMs: 30, onOutcome: (e) => kinds.push(e.kind) })
      const call = idem.run({ scope: 'acct', key: fresh('fenced-step'), input: 1 }, async (ctx) => {
        await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve))
        return ctx.step('after', async () => 'never')
      })
      await expect(call).rejects.toThrow(LeaseLostError)
      expect(kinds).toEqual(['lease-lost'])
    })

    it('a paused zombie wakes after a takeover: its outcome is refused by the token and the survivor’s stands', async () => {
      const store = memoryLeasedStore()
      // A paused holder sends no renewals: its renewal never arrives.
      const zombieStore = spied(store, { renew: () => new Promise<boolean>(() => {}) })
      const zombieKinds: string[] = []
      const zombie = createLeasedIdem({ store: zombieStore.store, leaseMs: 100, heartbeatMs: 30, onOutcome: (e) => zombieKinds.push(e.kind) })
      const survivor = createLeasedIdem({ store, leaseMs: 10_000, waitMs: 5_000 })
      const key = fresh('zombie')
      const wake = latch()
      const charged: string[] = []
      const zombieCall = zombie.run({ scope: 'acct', key, input: 1 }, async (ctx) => {
        await ctx.step('charge', async () => charged.push('zombie'))
        await wake.wait
        return 'zombie outcome'
      })
      const survived = await survivor.run({ scope: 'acct', key, input: 1 }, async (ctx) => {
        await ctx.step('charge', async () => charged.push('survivor'))
        return 'survivor outcome'
      })
      expect(survived).toEqual({ value: 'survivor outcome', replayed: false, stored: true })
      wake.open()
      await expect(zombieCall).rejects.toThrow(/not stored: another call took the key over/)
      expect(zombieStore.calls.filter((c) => c.method === 'complete')).toEqual([{ method: 'complete', result: false }])
      expect(charged).toEqual(['zombie'])
      expect(zombieKinds).toEqual(['lease-lost'])
      expect(await survivor.run({ scope: 'acct', key, input: 1 }, async () => 'never')).toEqual({ ...survived, replayed: true })
    })

    it('renewals that fail for a whole lease abort the signal; if nobody took over, the outcome still lands', async () => {
      const spy = spied(memoryLeasedStore(), {
        renew: async () => {
          throw new StoreUnavailableError('down')
        },
      })
      const idem = createLeasedIdem({ store: spy.store, leaseMs: 90, heartbeatMs: 30 })
      const key = fresh('unconfirmed')
      let aborted = false
      const result = await idem.run({ scope: 'acct', key, input: 1 }, async (ctx) => {
        await sleep(250)
        aborted = ctx.signal.aborted
        return 'late but fine'
      })
      expect(aborted).toBe(true)
      expect(result).toEqual({ value: 'late but fine', replayed: false, stored: true })
    })
  })

  it('store failures are StoreUnavailableError and the function never runs', async () => {
    const closed = memoryLeasedStore()
    closed.close()
    const broken = spied(memoryLeasedStore(), {
      claim: async () => {
        throw new TypeError('a bug in a custom store')
      },
    })
    for (const store of [closed, broken.store]) {
      let ran = false
      await expect(createLeasedIdem({ store }).run({ scope: 'acct', key: fresh('down'), input: 1 }, async () => (ran = true))).rejects.toThrow(
        StoreUnavailableError,
      )
      expect(ran).toBe(false)
    }
  })

  it('reports every outcome to onOutcome', async () => {
    const events: OutcomeEvent[] = []
    const idem = createLeasedIdem({ store: memoryLeasedStore(), onOutcome: (e) => events.push(e) })
    const key = fresh('events')
    await idem.run({ scope: 'acct', key, input: 1 }, async () => 1)
    await idem.run({ scope: 'acct', key, input: 1 }, async () => 1)
    await idem.run({ scope: 'acct', key, input: 2 }, async () => 1).catch(() => {})
    await idem.run({ scope: 'acct', key: fresh('e'), input: 1 }, async () => discard(1))
    expect(events.map((e) => e.kind)).toEqual(['fresh', 'replayed', 'mismatch', 'not-stored'])
    expect(events.every((e) => e.store === 'memory' && e.scope === 'acct')).toBe(true)
  })

  it('refuses bad options and keys at once', () => {
    const store = memoryLeasedStore()
    expect(() => createLeasedIdem({ store, leaseMs: 100, heartbeatMs: 100 })).toThrow(InvalidOptionError)
    expect(() => createLeasedIdem({ store, leaseMs: 1.5 })).toThrow(InvalidOptionError)
    expect(() => createLeasedIdem({ store, onError: 'retry' as never })).toThrow(InvalidOptionError)
    expect(() => createLeasedIdem({ store, deadlineMs: 0 })).toThrow(/option "deadlineMs"/)
    expect(createLeasedIdem({ store, deadlineMs: 1_000 }).settings).toEqual({ deadlineMs: 1_000 })
    expect(() => createLeasedIdem({ store: {} as LeasedStore })).toThrow(InvalidOptionError)
    const idem = createLeasedIdem({ store })
    return Promise.all([
      expect(idem.run({ scope: 'acct', key: 'has space', input: 1 }, async () => 1)).rejects.toThrow(InvalidKeyError),
      expect(idem.run({ scope: '', key: 'k', input: 1 }, async () => 1)).rejects.toThrow(InvalidKeyError),
      expect(idem.run({ scope: 'acct', key: 'k2' } as never, async () => 1)).rejects.toThrow(InvalidOptionError),
      expect(idem.run({ scope: 'acct', key: fresh('step-name'), input: 1 }, async (ctx) => ctx.step('', async () => 1))).rejects.toThrow(
        InvalidOptionError,
      ),
    ])
  })

  describe('an outcome or a step result larger than the store holds (maxOutcomeBytes)', () => {
    // A string whose JSON form is exactly `bytes` of UTF-8, with characters of 2, 3 and 4 bytes in it.
    const ofBytes = (bytes: number): string => `é€😀${'a'.repeat(bytes - 2 - 9)}`
    const small = (): LeasedStore => ({ ...memoryLeasedStore(), maxOutcomeBytes: 4096 })

    it('is refused at creation when the store declares no limit', () => {
      const { maxOutcomeBytes: _, ...undeclared } = memoryLeasedStore()
      expect(() => createLeasedIdem({ store: undeclared as never })).toThrow(/option "store" must declare "maxOutcomeBytes"/)
    })

    it('an outcome of exactly the limit is stored and replayed', async () => {
      const idem = createLeasedIdem({ store: small() })
      const key = fresh('at')
      const at = ofBytes(4096)
      expect(await idem.run({ scope: 'acct', key, input: 1 }, async () => at)).toMatchObject({ value: at, replayed: false })
      expect(await idem.run({ scope: 'acct', key, input: 1 }, async () => 'never')).toMatchObject({ value: at, replayed: true })
    })

    it('one byte more: the call ran, so the key is completed without it, and every retry is OutcomeTooLargeError without running', async () => {
      const idem = createLeasedIdem({ store: small(), leaseMs: 30, waitMs: 0 })
      const key = fresh('over')
      let runs = 0
      const fn = async () => {
        runs++
        return ofBytes(4097)
      }
      const first = await idem.run({ scope: 'acct', key, input: 1 }, fn).catch((e: unknown) => e)
      expect(first).toBeInstanceOf(OutcomeTooLargeError)
      expect(first).toMatchObject({ outcomeBytes: 4097, maxOutcomeBytes: 4096 })
      expect((first as Error).message).toMatch(/does not run again/)
      // Well past the lease: nothing holds the key any more, it is completed.
      await sleep(60)
      for (let i = 0; i < 2; i++) {
        const again = await idem.run({ scope: 'acct', key, input: 1 }, fn).catch((e: unknown) => e)
        expect(again).toBeInstanceOf(OutcomeTooLargeError)
        expect(again).toMatchObject({ outcomeBytes: 4097, maxOutcomeBytes: 4096 })
      }
      expect(runs).toBe(1)
    })

    it('a step result one byte over: the call fails, its key is completed without an outcome, and neither the step nor the call runs again', async () => {
      const idem = createLeasedIdem({ store: small(), leaseMs: 30, waitMs: 0 })
      const key = fresh('step-over')
      let charges = 0
      let calls = 0
      const fn = async (ctx: StepContext) => {
        calls++
        await ctx.step('charge', async () => {
          charges++
          return ofBytes(4097)
        })
        return 'done'
      }
      await expect(idem.run({ scope: 'acct', key, input: 1 }, fn)).rejects.toThrow(/step "charge"/)
      await sleep(60)
      await expect(idem.run({ scope: 'acct', key, input: 1 }, fn)).rejects.toThrow(OutcomeTooLargeError)
      expect({ charges, calls }).toEqual({ charges: 1, calls: 1 })
    })

    it('a call that recovers from a step too large to save completes with its own outcome', async () => {
      const idem = createLeasedIdem({ store: small() })
      const key = fresh('step-recovers')
      const fn = async (ctx: StepContext) => {
        const saved = await ctx.step('report', async () => ofBytes(5000)).catch((error: unknown) => error)
        return saved instanceof OutcomeTooLargeError ? 'report too large, sent by mail instead' : 'report saved'
      }
      expect((await idem.run({ scope: 'acct', key, input: 1 }, fn)).value).toBe('report too large, sent by mail instead')
      expect(await idem.run({ scope: 'acct', key, input: 1 }, async () => 'never')).toMatchObject({ value: 'report too large, sent by mail instead', replayed: true })
    })

    it('no returned value reads as the record of an outcome too large', async () => {
      const idem = createLeasedIdem({ store: memoryLeasedStore() })
      const key = fresh('lookalike')
      const lookalike = { idem: 'outcome-too-large', outcomeBytes: 1, maxOutcomeBytes: 2 }
      await idem.run({ scope: 'acct', key, input: 1 }, async () => lookalike)
      expect(await idem.run({ scope: 'acct', key, input: 1 }, async () => 'never')).toMatchObject({ value: lookalike, replayed: true })
    })
  })
})
