import { describe, expect, it } from 'vitest'
import { readClaim, RecentKeys } from './key-sessions.js'

describe('readClaim', () => {
  it('reads no row as a new key, and the three claims that carry nothing', () => {
    expect(readClaim(undefined)).toEqual({ state: 'new' })
    expect(readClaim({ claim: 'n' })).toEqual({ state: 'new' })
    expect(readClaim({ claim: 'l' })).toEqual({ state: 'locked' })
    expect(readClaim({ claim: 's' })).toEqual({ state: 'stale' })
  })

  it('splits a found record at the fingerprint length, counted in characters as Postgres and SQLite count them', () => {
    expect(readClaim({ claim: 'f3:abc{"status":201}' })).toEqual({ state: 'found', record: { fingerprint: 'abc', outcome: '{"status":201}' } })
    // Digits and colons in the fingerprint and the outcome; astral characters count once.
    expect(readClaim({ claim: 'f7:1:😀:2é3:4😀' })).toEqual({ state: 'found', record: { fingerprint: '1:😀:2é3', outcome: ':4😀' } })
    expect(readClaim({ claim: 'f2:😀😀' })).toEqual({ state: 'found', record: { fingerprint: '😀😀', outcome: '' } })
  })

  it('refuses anything else, naming the value', () => {
    for (const value of [undefined, null, '', 'x', 'f', 'f:abc', 'fx:abc', 'f4:abc', 'f-1:abc', 'f1.5:ab', 'f3abc', 7]) {
      expect(() => readClaim({ claim: value }), String(value)).toThrow(/a key claim returned an unexpected value/)
    }
  })
})

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
