import { describe, expect, it } from 'vitest'
import { memoryStore } from '../stores/memory/index.js'
import { createIdem, type OutcomeEvent } from './engine.js'
import { InvalidKeyError } from './errors/invalid-key.js'
import { InvalidOptionError } from './errors/invalid-option.js'
import { discard } from './result.js'

describe('createIdem', () => {
  it('fails at start-up naming the option', () => {
    expect(() => createIdem({ store: undefined as never })).toThrow(/option "store"/)
    expect(() => createIdem({ store: memoryStore(), ttlMs: 0 })).toThrow(/option "ttlMs"/)
    expect(() => createIdem({ store: memoryStore(), ttlMs: 1.5 })).toThrow(InvalidOptionError)
    expect(() => createIdem({ store: memoryStore(), waitMs: -1 })).toThrow(/option "waitMs"/)
    expect(() => createIdem({ store: memoryStore(), onOutcome: 'log' as never })).toThrow(/option "onOutcome"/)
  })

  it('validates each call before touching the store', async () => {
    const idem = createIdem({ store: memoryStore() })
    const fn = () => 1
    await expect(idem.run({ scope: '', key: 'k', input: 1 }, fn)).rejects.toThrow(/option "scope"/)
    await expect(idem.run({ scope: 'a\0b', key: 'k', input: 1 }, fn)).rejects.toThrow(/option "scope"/)
    await expect(idem.run({ scope: 's', key: '', input: 1 }, fn)).rejects.toThrow(InvalidKeyError)
    await expect(idem.run({ scope: 's', key: 'ключ', input: 1 }, fn)).rejects.toThrow(/visible ASCII/)
    await expect(idem.run({ scope: 's', key: 'k'.repeat(256), input: 1 }, fn)).rejects.toThrow(/limit is 255/)
    await expect(idem.run({ scope: 's', key: 'k' }, fn)).rejects.toThrow(/pass "input"/)
    await expect(idem.run({ scope: 's', key: 'k', input: () => 1 }, fn)).rejects.toThrow(/option "input"/)
    await expect(idem.run({ scope: 's', key: 'k', input: 1, ttlMs: -5 }, fn)).rejects.toThrow(/option "ttlMs"/)
    await expect(idem.run({ scope: 's', key: 'k', input: 1, storeOutcome: 'no' as never }, fn)).rejects.toThrow(/option "storeOutcome"/)
  })

  it('reports each outcome to the hook, and a throwing hook changes nothing', async () => {
    const events: OutcomeEvent['kind'][] = []
    const idem = createIdem({
      store: memoryStore(),
      onOutcome: (event) => {
        events.push(event.kind)
        throw new Error('broken metrics')
      },
    })
    await idem.run({ scope: 's', key: 'k', input: 1 }, () => 'a')
    await idem.run({ scope: 's', key: 'k', input: 1 }, () => 'a')
    await expect(idem.run({ scope: 's', key: 'k', input: 2 }, () => 'a')).rejects.toThrow()
    await expect(idem.run({ scope: 's', key: 'e', input: 1 }, () => Promise.reject(new Error('x')))).rejects.toThrow('x')
    await idem.run({ scope: 's', key: 'n', input: 1 }, () => discard('a'))
    expect(events).toEqual(['fresh', 'replayed', 'mismatch', 'error', 'not-stored'])
  })

  it('withStore keeps the settings and the hook over another store, and leaves the first store alone', async () => {
    const events: string[] = []
    const first = memoryStore()
    const other = memoryStore()
    const idem = createIdem({ store: first, ttlMs: 30, onOutcome: (event) => events.push(`${event.store}:${event.kind}`) }).withStore(other)
    expect(idem.store).toBe(other)
    await idem.run({ scope: 's', key: 'k', input: 1 }, () => 'a')
    expect((await createIdem({ store: first }).run({ scope: 's', key: 'k', input: 1 }, () => 'b')).replayed).toBe(false)
    await new Promise((resolve) => setTimeout(resolve, 60))
    // The engine's retention came along: the key expired after 30 ms.
    expect((await idem.run({ scope: 's', key: 'k', input: 1 }, () => 'c')).replayed).toBe(false)
    expect(events).toEqual(['memory:fresh', 'memory:fresh'])
  })
})
