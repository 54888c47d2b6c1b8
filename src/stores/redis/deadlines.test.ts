import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { CommandDeadlines } from './caller.js'

describe('CommandDeadlines', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] })
  })
  afterEach(() => {
    vi.useRealTimers()
  })

  it('expires exactly the commands still running at their deadline, oldest first', () => {
    const clock = new CommandDeadlines(100)
    const expired: string[] = []
    const a = clock.watch(() => expired.push('a'))
    vi.advanceTimersByTime(30)
    const b = clock.watch(() => expired.push('b'))
    const c = clock.watch(() => expired.push('c'))
    vi.advanceTimersByTime(30)
    const d = clock.watch(() => expired.push('d'))
    expect(clock.settle(b)).toBe(true)
    vi.advanceTimersByTime(40)
    expect(expired).toEqual(['a'])
    vi.advanceTimersByTime(30)
    expect(expired).toEqual(['a', 'c'])
    expect(clock.settle(d)).toBe(true)
    vi.advanceTimersByTime(1_000)
    expect(expired).toEqual(['a', 'c'])
    // Settling after the deadline says the caller was answered already.
    expect(clock.settle(a)).toBe(false)
    expect(clock.settle(c)).toBe(false)
  })

  it('keeps watching after it went idle', () => {
    const clock = new CommandDeadlines(50)
    const first = clock.watch(() => {})
    expect(clock.settle(first)).toBe(true)
    vi.advanceTimersByTime(20)
    let expired = false
    clock.watch(() => (expired = true))
    // The timer armed for the first command fires first, and waits on for this one.
    vi.advanceTimersByTime(40)
    expect(expired).toBe(false)
    vi.advanceTimersByTime(10)
    expect(expired).toBe(true)
  })
})
