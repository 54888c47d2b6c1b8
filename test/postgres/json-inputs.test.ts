// Every call that fingerprints a value (memo's input, run's input, a Lambda function's
// payload) refuses one that is not JSON data, naming where it is, on real Postgres. The
// release before hashed a Map, a Set or a URLSearchParams as `{}`: two different inputs
// under one name or key then shared one stored output, for the whole retention.
import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createMemo } from '../../src/data/index.js'
import { createIdem, InvalidOptionError } from '../../src/index.js'
import { makeIdempotent } from '../../src/lambda/index.js'
import { postgresStore, type PostgresStore } from '../../src/stores/postgres/index.js'
import { lambdaContext, orderPlaced } from '../lambda/support.js'
import { testSchema, type TestSchema } from '../support/postgres.js'

const db = await testSchema('idem_json_inputs')

/** Two inputs that differ only in what JSON.stringify cannot write, and where the first differs. */
const pairs: Array<[string, unknown, unknown, RegExp]> = [
  ['a Map', { claim: 'c1', tags: new Map([['urgent', true]]) }, { claim: 'c1', tags: new Map([['routine', true]]) }, /input\.tags is a Map$/],
  ['a Set', { claim: 'c1', ids: new Set([1, 2]) }, { claim: 'c1', ids: new Set([3]) }, /input\.ids is a Set$/],
  ['a bare URLSearchParams', new URLSearchParams('q=chest+pain'), new URLSearchParams('q=headache'), /input is an instance of URLSearchParams/],
  ['an Error', { reason: new Error('timeout') }, { reason: new Error('refused') }, /input\.reason is an instance of Error/],
  ['a function', { format: () => 'a' }, { format: () => 'b' }, /input\.format is a function$/],
]

describe.skipIf(db === undefined)('values that are not JSON data are refused wherever they are fingerprinted (real Postgres)', () => {
  const { pool, schema } = db as TestSchema
  let store: PostgresStore
  beforeAll(async () => {
    store = postgresStore({ pool, schema })
    await store.migrate()
  })
  afterAll(() => db?.drop())
  const rowsIn = async (scope: string): Promise<number> =>
    (await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}".idem_keys WHERE scope = $1`, [scope])).rows[0]!.n

  it.each(pairs)('memo: two inputs holding %s never share an output; both are InvalidOptionError and fn never runs', async (_, first, second, where) => {
    const memo = createMemo({ store })
    const name = `summarise-${randomUUID()}`
    let runs = 0
    const fn = (): string => `summary ${++runs}`
    for (const input of [first, second]) {
      const call = memo(name, input, fn)
      await expect(call).rejects.toBeInstanceOf(InvalidOptionError)
      await expect(memo(name, input, fn)).rejects.toThrow(where)
    }
    expect(runs).toBe(0)
    expect(await rowsIn(`memo:${name}@1`)).toBe(0)
  })

  it.each(pairs)("run: an input holding %s under a used key is refused, not replayed as the first one's", async (_, first, second, where) => {
    const idem = createIdem({ store })
    const scope = `acct-${randomUUID()}`
    let runs = 0
    for (const input of [first, second]) {
      const call = idem.run({ scope, key: 'k-1', input }, () => ++runs)
      await expect(call).rejects.toThrow(InvalidOptionError)
      await expect(idem.run({ scope, key: 'k-1', input }, () => ++runs)).rejects.toThrow(new RegExp(`^run: option "input" must be JSON data: ${where.source}`))
    }
    expect(runs).toBe(0)
    expect(await rowsIn(scope)).toBe(0)
  })

  it('makeIdempotent: a payload (option "input") holding a Set is refused, not replayed for the same event id with another amount', async () => {
    let runs = 0
    const handler = makeIdempotent(async (event: ReturnType<typeof orderPlaced>) => ({ shipped: event.detail.orderId, run: ++runs }), {
      store,
      scope: `ship-${randomUUID()}`,
      // What must match, as a Set "because order does not matter".
      input: (event) => ({ order: event.detail.orderId, amounts: new Set([event.detail.amount]) }),
    })
    for (const amount of [1, 2]) {
      const event = orderPlaced({ orderId: 'o-1', amount }, 'evt-1')
      await expect(handler(event, lambdaContext(30_000))).rejects.toThrow(InvalidOptionError)
      await expect(handler(event, lambdaContext(30_000))).rejects.toThrow(
        /^makeIdempotent: the payload \(option "input"\) must be JSON data: payload\.amounts is a Set$/,
      )
    }
    expect(runs).toBe(0)
  })

  it('makeIdempotent: a whole event holding a Map (a direct invocation) is refused, naming the event\'s path', async () => {
    let runs = 0
    const handler = makeIdempotent(async () => ++runs, { store, scope: `direct-${randomUUID()}` })
    for (const tags of [new Map([['a', 1]]), new Map([['b', 2]])]) {
      const event = { id: 'evt-2', detail: { tags } }
      await expect(handler(event, lambdaContext(30_000))).rejects.toThrow(/payload\.detail\.tags is a Map$/)
    }
    expect(runs).toBe(0)
  })
})
