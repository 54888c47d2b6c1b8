import { describe, expect, it } from 'vitest'
import { RecentKeys } from './recent-keys.js'

describe('RecentKeys', () => {
  it('keeps the last `limit` keys, the oldest going first', () => {
    const recent = new RecentKeys(3)
    for (const key of ['a', 'b', 'c', 'd']) recent.add('s', key)
    expect(['a', 'b', 'c', 'd'].map((key) => recent.has('s', key))).toEqual([false, true, true, true])
    recent.add('s', 'e')
    expect(['b', 'c', 'd', 'e'].map((key) => recent.has('s', key))).toEqual([false, true, true, true])
  })

  it('keeps scopes apart, including ones that would concatenate alike', () => {
    const recent = new RecentKeys(10)
    recent.add('ab', 'c')
    expect(recent.has('ab', 'c')).toBe(true)
    expect(recent.has('a', 'bc')).toBe(false)
    expect(recent.has('other', 'c')).toBe(false)
  })

  it('forgets a deleted key, and adding a known key changes nothing', () => {
    const recent = new RecentKeys(2)
    recent.add('s', 'a')
    recent.add('s', 'a')
    recent.add('s', 'b')
    expect(recent.has('s', 'a')).toBe(true)
    recent.delete('s', 'a')
    expect(recent.has('s', 'a')).toBe(false)
    expect(recent.has('s', 'b')).toBe(true)
  })

  it('a key that pushes out the last one of its own scope is still kept', () => {
    const recent = new RecentKeys(1)
    recent.add('s', 'a')
    recent.add('s', 'b')
    expect(recent.has('s', 'a')).toBe(false)
    expect(recent.has('s', 'b')).toBe(true)
    recent.add('t', 'c')
    expect(recent.has('s', 'b')).toBe(false)
    expect(recent.has('t', 'c')).toBe(true)
  })
})
