import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { InFlightError, InvalidOptionError, OutcomeNotSerializableError } from '../../src/core/errors/index.js'
import type { KeyStore } from '../../src/ports/key-store.js'
import { createMemo, type Memo } from '../../src/data/index.js'
import { memoryStore } from '../../src/stores/memory/index.js'
import { postgresStore } from '../../src/stores/postgres/index.js'
import { sqliteStore } from '../../src/stores/sqlite/index.js'
import { testSchema, type TestSchema } from '../support/postgres.js'
import { testSqlite } from './sqlite.js'

interface MemoHarness {
  store: KeyStore<unknown>
  /** The stored JSON text of every output under `memo:<name>@…`, or undefined when the store cannot be read directly. */
  storedOutputs?: (name: string) => Promise<string[]>
}

/** A fake LLM: different wording on every call, like a sampled model. */
function fakeLlm() {
  let calls = 0
  return {
    get calls() {
      return calls
    },
    async summarise(text: string): Promise<{ summary: string; tokens: number }> {
      calls++
      await new Promise((resolve) => setImmediate(resolve)) // a real await, so racing callers interleave
      return { summary: `Draft ${calls}: ${text}`, tokens: 10 + calls }
    },
  }
}

function itMemoises(getHarness: () => MemoHarness): void {
  let memo: Memo
  let harness: MemoHarness
  beforeAll(() => {
    harness = getHarness()
    memo = createMemo({ store: harness.store })
  })
  const name = (): string => `summarise-${randomUUID()}`

  it('stores the output before returning; a replay returns the same bytes and never calls fn', async () => {
    const llm = fakeLlm()
    const step = name()
    const input = { intakeId: 'in-1', text: 'chest pain since Monday' }
    const first = await memo(step, input, () => llm.summarise(input.text), { version: 'prompt-v1' })
    // Persisted by the time memo returned: readable from outside.
    const stored = await harness.storedOutputs?.(step)
    if (stored !== undefined) expect(stored).toEqual([JSON.stringify(first)])
    const again = await memo(step, { text: input.text, intakeId: 'in-1' }, () => llm.summarise(input.text), { version: 'prompt-v1' })
    expect(llm.calls).toBe(1)
    expect(JSON.stringify(again)).toBe(JSON.stringify(first))
    expect(again).toEqual({ summary: 'Draft 1: chest pain since Monday', tokens: 11 })
  })

  it('calls fn once for 32 concurrent callers with the same input, and all get its output', async () => {
    const llm = fakeLlm()
    const step = name()
    const results = await Promise.all(
      Array.from({ length: 32 }, () => memo(step, { text: 'same' }, () => llm.summarise('same'), { version: 3 })),
    )
    expect(llm.calls).toBe(1)
    expect(new Set(results.map((r) => JSON.stringify(r))).size).toBe(1)
    const stored = await harness.storedOutputs?.(step)
    if (stored !== undefined) expect(stored).toHaveLength(1)
  })

  it('keys by name, version and input: changing any one calls fn again', async () => {
    const llm = fakeLlm()
    const step = name()
    const fn = (): Promise<unknown> => llm.summarise('x')
    await memo(step, { text: 'x' }, fn, { version: 'v1' })
    await memo(step, { text: 'y' }, fn, { version: 'v1' })
    await memo(step, { text: 'x' }, fn, { version: 'v2' })
    await memo(`${step}-other`, { text: 'x' }, fn, { version: 'v1' })
    await memo(step, { text: 'x' }, fn) // version defaults to '1', not 'v1'
    expect(llm.calls).toBe(5)
    await memo(step, { text: 'x' }, fn, { version: 'v1' })
    expect(llm.calls).toBe(5)
  })

  it('stores nothing when fn throws, so the next call runs it again', async () => {
    const step = name()
    let calls = 0
    const flaky = async (): Promise<string> => {
      if (++calls === 1) throw new Error('rate limited')
      return 'ok'
    }
    await expect(memo(step, 1, flaky)).rejects.toThrow('rate limited')
    expect(await memo(step, 1, flaky)).toBe('ok')
    expect(await memo(step, 1, flaky)).toBe('ok')
    expect(calls).toBe(2)
  })

  it('forgets an output after its ttlMs, and then calls fn again', async () => {
    const llm = fakeLlm()
    const step = name()
    const first = await memo(step, 'in', () => llm.summarise('in'), { ttlMs: 1 })
    await new Promise((resolve) => setTimeout(resolve, 20))
    const second = await memo(step, 'in', () => llm.summarise('in'), { ttlMs: 1 })
    expect(llm.calls).toBe(2)
    expect(second).not.toEqual(first)
  })

  it('refuses an output without an exact JSON form, storing nothing', async () => {
    const step = name()
    await expect(memo(step, 1, () => ({ big: 1n }))).rejects.toThrow(OutcomeNotSerializableError)
    expect(await memo(step, 1, () => 'fine')).toBe('fine')
  })

  it.each([
    ['a name with "@"', 'a@b', 1, {}, /memo: "name" must be 1–200 characters without "@"/],
    ['an empty name', '', 1, {}, /"name"/],
    ['an input that is not JSON data', 'step', () => 1, {}, /memo: "input" must be JSON data/],
    ['an empty version', 'step', 1, { version: '' }, /option "version" is empty/],
    ['a fractional ttlMs', 'step', 1, { ttlMs: 1.5 }, /option "ttlMs" must be a whole number/],
  ])('refuses %s with InvalidOptionError', async (_, n, input, options, message) => {
    await expect(memo(n, input, () => 1, options)).rejects.toThrow(InvalidOptionError)
    await expect(memo(n, input, () => 1, options)).rejects.toThrow(message)
  })
}

describe('memo on the memory store', () => {
  itMemoises(() => ({ store: memoryStore() as KeyStore<unknown> }))

  it('refuses a missing store and bad store-wide durations, naming the option', () => {
    expect(() => createMemo({ store: undefined as never })).toThrow(/createMemo: option "store" must be an idem store/)
    expect(() => createMemo({ store: memoryStore(), waitMs: -1 })).toThrow(/option "waitMs"/)
  })

  it('reports InFlightError when the first caller runs longer than waitMs', async () => {
    const memo = createMemo({ store: memoryStore(), waitMs: 0 })
    let release!: () => void
    const first = memo('slow', 1, () => new Promise<string>((resolve) => (release = () => resolve('done'))))
    await expect(memo('slow', 1, () => 'second')).rejects.toThrow(InFlightError)
    release()
    expect(await first).toBe('done')
    expect(await memo('slow', 1, () => 'second')).toBe('done')
  })
})

describe('memo on SQLite (a real file of its own)', () => {
  const files = testSqlite('idem-memo')
  // A database for memo alone: while fn runs, memo's transaction holds its connection's writer.
  const db = files.open('memo')
  const store = sqliteStore({ db })
  store.migrate()
  afterAll(() => files.close())
  const outputs = db.prepare('SELECT outcome FROM idem_keys WHERE scope LIKE ?')

  itMemoises(() => ({
    store: store as KeyStore<unknown>,
    storedOutputs: async (name) => (outputs.all(`memo:${name}@%`) as { outcome: string }[]).map((r) => r.outcome),
  }))
})

const pgDb = await testSchema('idem_data_memo', 10)

describe.skipIf(pgDb === undefined)('memo on Postgres (real Postgres)', () => {
  const { pool, schema } = pgDb as TestSchema
  const store = postgresStore({ pool, schema })
  beforeAll(() => store.migrate())
  afterAll(() => pgDb?.drop())

  itMemoises(() => ({
    store: store as KeyStore<unknown>,
    storedOutputs: async (name) => {
      const { rows } = await pool.query(`SELECT outcome FROM "${schema}".idem_keys WHERE scope LIKE $1`, [`memo:${name}@%`])
      return rows.map((r: { outcome: string }) => r.outcome)
    },
  }))
})
