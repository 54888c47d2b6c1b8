import { randomUUID } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { latch } from '../../../test/leased/support.js'
import { withLeases } from '../../../test/support/leases.js'
import { memoryLeasedStore } from '../../stores/memory/leased.js'
import { LeaseLostError } from '../errors/lease-lost.js'
import { OverranError } from '../errors/overran.js'
import { StoreUnavailableError } from '../errors/store-unavailable.js'
import { discard } from '../result.js'
import { createLeasedIdem } from './engine.js'
import type { LeasedStore } from '../../ports/leased-store.js'

const fresh = (label: string): string => `${label}-${randomUUID()}`

/** The store, with every lease's `fencingToken` answered by `fencingToken` instead. */
const answering = (inner: LeasedStore, fencingToken: () => Promise<number | undefined>): LeasedStore => withLeases(inner, () => ({ fencingToken }))

describe('ctx.fencingToken()', () => {
  it("is the lease's fencing token: a safe integer, the same on every read in a call, greater for every later holder", async () => {
    const idem = createLeasedIdem({ store: memoryLeasedStore() })
    const key = fresh('grows')
    const tokens: number[] = []
    for (let i = 0; i < 3; i++) {
      // Each call gives the key back (a discarded outcome releases it), so the next claims it anew.
      await idem.run({ scope: 'acct', key, input: 1 }, async (ctx) => {
        const first = await ctx.fencingToken()
        expect(await ctx.fencingToken()).toBe(first)
        // Taken off the context, it still reads this call's lease.
        const { fencingToken } = ctx
        expect(await fencingToken()).toBe(first)
        tokens.push(first)
        return discard(i)
      })
    }
    for (const token of tokens) expect(Number.isSafeInteger(token) && token > 0, `${token}`).toBe(true)
    expect(tokens[1]).toBeGreaterThan(tokens[0]!)
    expect(tokens[2]).toBeGreaterThan(tokens[1]!)
  })

  it('rejects with LeaseLostError when the store says the lease no longer holds: the lease is fenced, nothing is stored', async () => {
    const inner = memoryLeasedStore()
    const idem = createLeasedIdem({ store: answering(inner, async () => undefined) })
    const key = fresh('replaced')
    let after: unknown
    const call = idem.run({ scope: 'acct', key, input: 1 }, async (ctx) => {
      await expect(ctx.fencingToken()).rejects.toBeInstanceOf(LeaseLostError)
      after = await ctx.step('after', () => 'never').catch((error: unknown) => error)
      return 'zombie'
    })
    await expect(call).rejects.toBeInstanceOf(LeaseLostError)
    expect(after).toBeInstanceOf(LeaseLostError)
    // Nothing was completed: the claim is still held, by nobody that runs.
    expect(await inner.claim('acct', key, 'other', 10_000, 60_000)).toMatchObject({ state: 'running' })
  })

  it('checks the lease on the spot first: a lease no longer confirmed rejects without asking the store', async () => {
    let asked = 0
    const idem = createLeasedIdem({
      store: answering(memoryLeasedStore(), async () => ++asked),
      leaseMs: 100,
    })
    const call = idem.run({ scope: 'acct', key: fresh('blocked'), input: 1 }, async (ctx) => {
      // Synchronous: no heartbeat can run meanwhile, and the lease is no longer confirmed.
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 250)
      return ctx.fencingToken()
    })
    await expect(call).rejects.toBeInstanceOf(LeaseLostError)
    expect(asked).toBe(0)
  })

  it('a store that fails is StoreUnavailableError; past the deadline, the OverranError', async () => {
    const failing = createLeasedIdem({ store: answering(memoryLeasedStore(), () => Promise.reject(new Error('connection reset'))) })
    await expect(failing.run({ scope: 'acct', key: fresh('down'), input: 1 }, (ctx) => ctx.fencingToken())).rejects.toBeInstanceOf(StoreUnavailableError)
    const slow = createLeasedIdem({ store: memoryLeasedStore(), deadlineMs: 50 })
    const hold = latch()
    let late: unknown
    const done = latch()
    const call = slow.run({ scope: 'acct', key: fresh('overran'), input: 1 }, async (ctx) => {
      await hold.wait
      late = await ctx.fencingToken().catch((error: unknown) => error)
      done.open()
    })
    const error = await call.catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(OverranError)
    hold.open()
    await done.wait
    expect(late).toBe(error)
  })
})
