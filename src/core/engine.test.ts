import { inspect } from 'node:util'
import { describe, expect, it } from 'vitest'
import { memoryStore } from '../stores/memory/index.js'
import { createIdem, type OutcomeEvent } from './engine.js'
import { InvalidKeyError } from './errors/invalid-key.js'
import { InvalidOptionError } from './errors/invalid-option.js'
import { OutcomeTooLargeError } from './errors/outcome-too-large.js'
import { OverranError } from './errors/overran.js'
import { createEventStream, type IdemEvent } from './events.js'
import { discard } from './result.js'

describe('createIdem', () => {
  it('prints a result with its value (console.log), and spreads and serialises it whole', async () => {
    const idem = createIdem({ store: memoryStore() })
    const fresh = await idem.run({ scope: 's', key: 'k', input: 1 }, () => ({ orderId: 7 }))
    expect(inspect(fresh)).toBe('{ value: { orderId: 7 }, replayed: false, stored: true }')
    expect(JSON.stringify(fresh)).toBe('{"value":{"orderId":7},"replayed":false,"stored":true}')
    expect({ ...fresh }).toEqual({ value: { orderId: 7 }, replayed: false, stored: true })
    const replay = await idem.run({ scope: 's', key: 'k', input: 1 }, () => ({ orderId: 8 }))
    expect(inspect(replay)).toBe('{ value: { orderId: 7 }, replayed: true, stored: true }')
  })

  it('fails at start-up naming the option', () => {
    expect(() => createIdem({ store: undefined as never })).toThrow(/option "store"/)
    expect(() => createIdem({ store: memoryStore(), ttlMs: 0 })).toThrow(/option "ttlMs"/)
    expect(() => createIdem({ store: memoryStore(), ttlMs: 1.5 })).toThrow(InvalidOptionError)
    expect(() => createIdem({ store: memoryStore(), waitMs: -1 })).toThrow(/option "waitMs"/)
    expect(() => createIdem({ store: memoryStore(), deadlineMs: 0 })).toThrow(/option "deadlineMs"/)
    expect(() => createIdem({ store: memoryStore(), deadlineMs: 2 ** 31 })).toThrow(/option "deadlineMs"/)
    expect(() => createIdem({ store: memoryStore(), onOutcome: 'log' as never })).toThrow(/option "onOutcome"/)
  })

  it('validates each call before touching the store', async () => {
    const idem = createIdem({ store: memoryStore() })
    const fn = () => 1
    // A scope that cannot identify a call is refused like a malformed key (the client's mistake); one that is no string is a misconfiguration.
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
    await expect(idem.run({ scope: 's', key: 'k', input: 1, deadlineMs: 1.5 }, fn)).rejects.toThrow(/option "deadlineMs"/)
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
    expect(createIdem({ store: memoryStore(), deadlineMs: 10_000 }).settings).toEqual({ deadlineMs: 10_000 })
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

  describe('an outcome larger than the store holds (maxOutcomeBytes)', () => {
    // A string whose JSON form is exactly `bytes` of UTF-8, with characters of 2, 3 and 4 bytes in it.
    const ofBytes = (bytes: number): string => `é€😀${'a'.repeat(bytes - 2 - 9)}`
    const small = () => ({ ...memoryStore(), maxOutcomeBytes: 4096 })

    it('is refused at creation when the store declares no limit, or less than 1 KiB', () => {
      const store = memoryStore()
      expect(() => createIdem({ store: { name: 'x', begin: store.begin } as never })).toThrow(/option "store" must declare "maxOutcomeBytes"/)
      expect(() => createIdem({ store: { ...store, maxOutcomeBytes: 1023 } })).toThrow(InvalidOptionError)
      expect(() => createIdem({ store: { ...store, maxOutcomeBytes: 1.5 } })).toThrow(InvalidOptionError)
    })

    it('one of exactly the limit is stored and replayed; one byte more rolls the call back with OutcomeTooLargeError', async () => {
      const store = small()
      const idem = createIdem({ store })
      const at = ofBytes(4096)
      expect(Buffer.byteLength(JSON.stringify(at))).toBe(4096)
      expect(await idem.run({ scope: 's', key: 'at', input: 1 }, () => at)).toMatchObject({ value: at, replayed: false })
      expect(await idem.run({ scope: 's', key: 'at', input: 1 }, () => 'never')).toMatchObject({ value: at, replayed: true })

      let runs = 0
      const over = (tx: { set(collection: string, id: string, value: unknown): void }) => {
        runs++
        tx.set('effects', 'over', runs)
        return ofBytes(4097)
      }
      const error = await idem.run({ scope: 's', key: 'over', input: 1 }, over).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(OutcomeTooLargeError)
      expect(error).toMatchObject({ code: 'outcome-too-large', outcomeBytes: 4097, maxOutcomeBytes: 4096 })
      expect((error as Error).message).toMatch(/rolled back/)
      // Rolled back with its effects: nothing happened, so the retry runs (and fails) again.
      expect(store.collection('effects').size).toBe(0)
      await expect(idem.run({ scope: 's', key: 'over', input: 1 }, over)).rejects.toThrow(OutcomeTooLargeError)
      expect(runs).toBe(2)
    })
  })

  it('gives up on a function still running at deadlineMs: OverranError, the key free at once, its late writes refused', async () => {
    const store = memoryStore()
    const events = createEventStream()
    const kinds: string[] = []
    events.subscribe((event: IdemEvent) => {
      if (event.type === 'call') kinds.push(event.kind)
    })
    const idem = createIdem({ store, events, deadlineMs: 20 })
    let release!: () => void
    const held = new Promise<void>((resolve) => (release = resolve))
    let late: unknown
    const stuck = idem.run({ scope: 's', key: 'k', input: 1 }, async (tx) => {
      tx.set('orders', 'first', { n: 1 })
      await held
      try {
        tx.set('orders', 'late', { n: 2 })
      } catch (error) {
        late = error
      }
    })
    const error = await stuck.catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(OverranError)
    expect(error).toMatchObject({ code: 'overran', retryAfterSeconds: 1 })
    expect((error as Error).message).toMatch(/"k" still ran 20 ms after it took its key \(deadlineMs\): its transaction was rolled back and the key freed/)
    // The retry runs at once, while the first function still holds on; a per-call deadline overrides the engine's.
    expect(await idem.run({ scope: 's', key: 'k', input: 1, waitMs: 0, deadlineMs: 60_000 }, () => 'retry')).toMatchObject({ value: 'retry', replayed: false })
    release()
    await new Promise((resolve) => setImmediate(resolve))
    expect(late).toBeInstanceOf(RangeError)
    expect([...store.collection('orders').keys()]).toEqual([])
    expect(kinds).toEqual(['overran', 'fresh'])
  })

  it('watches only a function that is still running: a synchronous one has no deadline to pass', async () => {
    const idem = createIdem({ store: memoryStore(), deadlineMs: 1 })
    const busy = (): string => {
      const until = performance.now() + 5
      while (performance.now() < until) {
        // a synchronous function that outlasts the deadline
      }
      return 'done'
    }
    expect(await idem.run({ scope: 's', key: 'sync', input: 1 }, busy)).toMatchObject({ value: 'done', stored: true })
  })
})
