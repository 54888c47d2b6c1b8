import { describe, expect, it } from 'vitest'
import { memoryStore } from '../stores/memory/index.js'
import { createIdem, type OutcomeEvent } from './engine.js'
import { InvalidKeyError } from './errors/invalid-key.js'
import { InvalidOptionError } from './errors/invalid-option.js'
import { createEventStream } from './events.js'
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
    // A scope that cannot identify a call is refused like a malformed key (400 over HTTP); one that is no string is a misconfiguration.
    await expect(idem.run({ scope: '', key: 'k', input: 1 }, fn)).rejects.toThrow(/^run: "scope" is empty/)
    await expect(idem.run({ scope: 'a\0b', key: 'k', input: 1 }, fn)).rejects.toThrow(/^run: "scope" contains NUL/)
    await expect(idem.run({ scope: 'a\ud800', key: 'k', input: 1 }, fn)).rejects.toThrow(InvalidKeyError)
    await expect(idem.run({ scope: 7 as never, key: 'k', input: 1 }, fn)).rejects.toThrow(/option "scope" must be a string/)
    await expect(idem.run({ scope: 's', key: '', input: 1 }, fn)).rejects.toThrow(InvalidKeyError)
    await expect(idem.run({ scope: 's', key: 'ключ', input: 1 }, fn)).rejects.toThrow(/visible ASCII/)
    await expect(idem.run({ scope: 's', key: 'k'.repeat(256), input: 1 }, fn)).rejects.toThrow(/limit is 255/)
    await expect(idem.run({ scope: 's', key: 'k' }, fn)).rejects.toThrow(/pass "input"/)
    await expect(idem.run({ scope: 's', key: 'k', input: () => 1 }, fn)).rejects.toThrow(/option "input"/)
    await expect(idem.run({ scope: 's', key: 'k', input: 1, ttlMs: -5 }, fn)).rejects.toThrow(/option "ttlMs"/)
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

  it('keeps what was set explicitly as its settings, for front ends to honour', () => {
    expect(createIdem({ store: memoryStore() }).settings).toEqual({})
    expect(createIdem({ store: memoryStore(), waitMs: 250 }).settings).toEqual({ waitMs: 250 })
    expect(createIdem({ store: memoryStore(), ttlMs: 60_000, waitMs: 0 }).settings).toEqual({ ttlMs: 60_000, waitMs: 0 })
  })

  it('reports every call to the event stream it was given', async () => {
    const events = createEventStream()
    const seen: string[] = []
    events.subscribe((event) => {
      if (event.type === 'call') seen.push(`${event.engine}:${event.store}:${event.kind}`)
    })
    const idem = createIdem({ store: memoryStore(), events })
    await idem.run({ scope: 's', key: 'k', input: 1 }, () => 'a')
    await idem.run({ scope: 's', key: 'k', input: 1 }, () => 'a')
    expect(seen).toEqual(['transactional:memory:fresh', 'transactional:memory:replayed'])
  })
})
