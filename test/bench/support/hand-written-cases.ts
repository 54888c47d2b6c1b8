// The cases every hand-written floor of the benches must pass, on its own database: a
// replay returns the stored answer without running the route, concurrent duplicates run
// it once, another request under the key is refused, and a failed or 5xx route leaves
// nothing behind. test/bench/hand-written.test.ts (Postgres) and
// hand-written-mysql.test.ts (MySQL) run them over their kit.
import { expect, it } from 'vitest'
import { fingerprintOf } from '../../../bench/hand-written.mjs'

/** A route's answer, as the hand-written schemes take and give it. */
export interface Answer {
  status: number
  body: string
  replayed?: boolean
}

/** A request to a scheme: its scope, key and fingerprint. */
export interface HandRequest {
  scope: string
  key: string
  fingerprint: string
}

/** One scheme on its database, as the cases drive it. */
export interface HandWrittenKit<Connection> {
  handle(request: HandRequest, route: (connection: Connection) => Promise<Answer>): Promise<Answer>
  /** The benches' route: one INSERT of `body` on the transaction's connection, then `delayMs` for duplicates to overlap. */
  route(body: string, delayMs?: number): (connection: Connection) => Promise<Answer>
  /** The rows the route inserted with `body`. */
  rowsOf(body: string): Promise<number>
  /** How many times the route has run. */
  runs(): number
  /** Asserts what a failed route under `key` must not leave behind besides its rows (a key row, a connection out of its pool). */
  leftNothing(key: string): Promise<void>
}

/** A POST /orders with `body` under `key`. */
export const request = (key: string, body: string): HandRequest => ({ scope: 'acct', key, fingerprint: fingerprintOf('POST', '/orders', body) })

/** Registers the cases on the kit `kitOf` gives (called inside each test, after the file's setup). */
export function handWrittenCases<Connection>(kitOf: () => HandWrittenKit<Connection>): void {
  it('answers a retry with the stored answer, without running the route', async () => {
    const kit = kitOf()
    const body = JSON.stringify({ ref: 'replay' })
    const before = kit.runs()
    const first = await kit.handle(request('k-replay', body), kit.route(body))
    const again = await kit.handle(request('k-replay', body), kit.route(body))
    expect(first.status).toBe(201)
    expect(again).toEqual({ status: 201, body: first.body, replayed: true })
    expect(kit.runs() - before).toBe(1)
    expect(await kit.rowsOf(body)).toBe(1)
  })

  it('runs concurrent duplicates once, every one getting the same answer', async () => {
    const kit = kitOf()
    for (let round = 0; round < 3; round++) {
      const body = JSON.stringify({ ref: `race-${round}` })
      const before = kit.runs()
      const answers = await Promise.all(Array.from({ length: 20 }, () => kit.handle(request(`k-race-${round}`, body), kit.route(body, 20))))
      expect(kit.runs() - before).toBe(1)
      expect(await kit.rowsOf(body)).toBe(1)
      expect(new Set(answers.map((answer) => `${answer.status} ${answer.body}`)).size).toBe(1)
      expect(answers.filter((answer) => answer.replayed !== true)).toHaveLength(1)
    }
  })

  it('refuses another request under a used key, and keeps the first answer', async () => {
    const kit = kitOf()
    const body = JSON.stringify({ ref: 'first' })
    const other = JSON.stringify({ ref: 'other' })
    const first = await kit.handle(request('k-other', body), kit.route(body))
    expect((await kit.handle(request('k-other', other), kit.route(other))).status).toBe(422)
    expect(await kit.rowsOf(other)).toBe(0)
    expect(await kit.handle(request('k-other', body), kit.route(body))).toEqual({ ...first, replayed: true })
  })

  it('keeps nothing of a route that throws or answers 5xx, and runs the retry afresh', async () => {
    const kit = kitOf()
    const body = JSON.stringify({ ref: 'failed' })
    await expect(
      kit.handle(request('k-failed', body), async (connection) => {
        await kit.route(body)(connection)
        throw new Error('the route failed after its INSERT')
      }),
    ).rejects.toThrow('the route failed')
    const unavailable = await kit.handle(request('k-failed', body), async (connection) => ({ ...(await kit.route(body)(connection)), status: 503 }))
    expect(unavailable.status).toBe(503)
    expect(await kit.rowsOf(body)).toBe(0)
    await kit.leftNothing('k-failed')
    const retried = await kit.handle(request('k-failed', body), kit.route(body))
    expect(retried.status).toBe(201)
    expect(retried.replayed).toBeUndefined()
    expect(await kit.rowsOf(body)).toBe(1)
  })
}
