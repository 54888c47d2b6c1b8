import { randomUUID } from 'node:crypto'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { latch } from '../../test/leased/support.js'
import { withLeases } from '../../test/support/leases.js'
import { memoryLeasedStore } from '../stores/memory/leased.js'
import { memoryStore } from '../stores/memory/store.js'
import { createIdem } from './engine.js'
import { OverranError } from './errors/overran.js'
import { HoldClock, holdClock, MAX_TICK_MS, type Ticking } from './hold-clock.js'
import { createLeasedIdem } from './leased/engine.js'
import type { LeasedStore } from '../ports/leased-store.js'

const fresh = (label: string): string => `${label}-${randomUUID()}`

/** Something held that writes down the time of every tick it sees. */
const ticks = (): Ticking & { seen: number[] } => {
  const seen: number[] = []
  return { seen, tick: (now) => seen.push(now) }
}

/** The memory leased store, counting the renewals and releases of the leases it hands back. */
function counted(inner: LeasedStore) {
  const count = { renew: 0, release: 0 }
  const store = withLeases(inner, (lease) => ({
    renew: (ms) => (count.renew++, lease.renew(ms)),
    release: () => (count.release++, lease.release()),
  }))
  return { store, count }
}

describe('HoldClock', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'setTimeout', 'clearTimeout', 'performance'] })
  })
  afterEach(() => {
    vi.useRealTimers()
  })

  it('ticks every registered call with one timer, and stops at the first tick with nothing registered', () => {
    const clock = new HoldClock(10)
    const [a, b] = [ticks(), ticks()]
    expect(clock.running).toBe(false)
    clock.hold(a)
    clock.hold(b)
    expect(vi.getTimerCount()).toBe(1)
    vi.advanceTimersByTime(25)
    expect([a.seen.length, b.seen.length]).toEqual([2, 2])
    clock.release(a)
    vi.advanceTimersByTime(10)
    expect([a.seen.length, b.seen.length]).toEqual([2, 3])
    clock.release(b)
    // A call that leaves arms and clears nothing: the next tick finds the clock idle and stops it.
    expect(vi.getTimerCount()).toBe(1)
    vi.advanceTimersByTime(10)
    expect(clock.running).toBe(false)
    expect(vi.getTimerCount()).toBe(0)
    expect(b.seen.length).toBe(3)
  })

  it('a call that leaves before the first tick is never ticked', () => {
    const clock = new HoldClock(10)
    const short = ticks()
    clock.hold(short)
    vi.advanceTimersByTime(5)
    clock.release(short)
    vi.advanceTimersByTime(50)
    expect(short.seen).toEqual([])
    expect(clock.running).toBe(false)
  })

  it('is shared by resolution: powers of two from 1 ms to MAX_TICK_MS', () => {
    expect(holdClock(300_000 / 8)).toBe(holdClock(MAX_TICK_MS))
    expect(holdClock(300_000 / 8).periodMs).toBe(MAX_TICK_MS)
    expect(holdClock(10).periodMs).toBe(8)
    expect(holdClock(8)).toBe(holdClock(15.9))
    expect(holdClock(0.25).periodMs).toBe(1)
  })
})

describe('the engines on the clock', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'setTimeout', 'clearTimeout', 'performance', 'Date'] })
  })
  afterEach(async () => {
    // The shared clocks outlive a test: each stops at its first idle tick, before the fake timers go.
    await vi.advanceTimersByTimeAsync(2 * MAX_TICK_MS)
    expect(vi.getTimerCount()).toBe(0)
    vi.useRealTimers()
  })

  it('100 leased calls held at once, and 100 transactional ones, arm no timer of their own: one clock, none once idle', async () => {
    const leased = createLeasedIdem({ store: memoryLeasedStore() })
    const transactional = createIdem({ store: memoryStore() })
    const hold = latch()
    const calls = [
      ...Array.from({ length: 100 }, () => leased.run({ scope: 'acct', key: fresh('held'), input: 1 }, async () => (await hold.wait, 'leased'))),
      ...Array.from({ length: 100 }, () => transactional.run({ scope: 'acct', key: fresh('held'), input: 1 }, async () => (await hold.wait, 'transactional'))),
    ]
    await vi.advanceTimersByTimeAsync(0)
    // Before the fix every held call armed a timer of its own: 200 here.
    expect(vi.getTimerCount()).toBe(1)
    hold.open()
    expect((await Promise.all(calls)).filter((r) => r.stored)).toHaveLength(200)
    await vi.advanceTimersByTimeAsync(MAX_TICK_MS)
    expect(vi.getTimerCount()).toBe(0)
  })

  it('a long leased call is renewed every heartbeatMs and overruns at its deadline, on the shared clock', async () => {
    const { store, count } = counted(memoryLeasedStore())
    const idem = createLeasedIdem({ store, leaseMs: 300, heartbeatMs: 100, deadlineMs: 1_000 })
    const hold = latch()
    const call = idem.run({ scope: 'acct', key: fresh('long'), input: 1 }, () => hold.wait).catch((error: unknown) => error)
    await vi.advanceTimersByTimeAsync(99)
    expect(count.renew).toBe(0)
    await vi.advanceTimersByTimeAsync(900)
    // A renewal at each tick at or after 100, 200, … 900 ms.
    expect(count.renew).toBe(9)
    expect(vi.getTimerCount()).toBe(1)
    expect(count.release).toBe(0)
    await vi.advanceTimersByTimeAsync(100)
    expect(await call).toBeInstanceOf(OverranError)
    expect(count.release).toBe(1)
    hold.open()
  })

  it('a long transactional call overruns at its deadline, on the shared clock', async () => {
    const idem = createIdem({ store: memoryStore(), deadlineMs: 1_000 })
    const hold = latch()
    let settled = false
    const call = idem
      .run({ scope: 'acct', key: fresh('long'), input: 1 }, () => hold.wait)
      .catch((error: unknown) => error)
      .finally(() => (settled = true))
    await vi.advanceTimersByTimeAsync(990)
    expect(settled).toBe(false)
    await vi.advanceTimersByTimeAsync(MAX_TICK_MS)
    expect(await call).toBeInstanceOf(OverranError)
    hold.open()
  })
})
