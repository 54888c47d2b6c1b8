// What a function behind API Gateway or an ALB answered is what its retry gets back
// (#44 items 1 and 2), through makeHttpHandler on Postgres in each of Lambda's HTTP
// formats: header values as they can be stored and read (a space after a value, Unicode
// text), bodies in the form they were answered in (text as text, base64 as base64, a
// bare 2.0 value as that value), and rows written before still replaying.
import { randomUUID } from 'node:crypto'
import { afterAll, describe, expect, it } from 'vitest'
import { createIdem } from '../../src/core/engine.js'
import { createEventStream, type WarningEvent } from '../../src/core/events.js'
import { DEFAULT_REPLAY_HEADERS } from '../../src/http/options.js'
import { fingerprintRequest } from '../../src/http/request-fingerprint.js'
import { makeHttpHandler, type LambdaHttpEvent } from '../../src/lambda/index.js'
import { postgresBackend } from '../http/support/backends.js'
import { HTTP_FORMATS, httpEvent, lambdaContext, type HttpFormat } from './support.js'

const backend = await postgresBackend('lambda_answers')
const REQUEST_BODY = '{"amount":5}'
const DISPOSITION = 'attachment; filename="报告.pdf"'

/** A structured result of `format` (an ALB with multi-value headers wants them all multi-value). */
function resultOf(format: HttpFormat, status: number, headers: Record<string, string>, body: string, isBase64Encoded?: boolean): object {
  const encoded = isBase64Encoded === undefined ? {} : { isBase64Encoded }
  if (format !== 'alb') return { statusCode: status, headers, body, ...encoded }
  const multiValueHeaders = Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, [value]]))
  return { statusCode: status, statusDescription: `${status}`, multiValueHeaders, body, ...encoded }
}

/** A header of a result, whichever of its fields holds it; repeated values joined with `, `. */
function headerOf(result: unknown, name: string): string | undefined {
  const { headers = {}, multiValueHeaders = {} } = result as { headers?: Record<string, unknown>; multiValueHeaders?: Record<string, unknown[]> }
  const single = Object.entries(headers).find(([key]) => key.toLowerCase() === name)
  if (single !== undefined) return String(single[1])
  return Object.entries(multiValueHeaders).find(([key]) => key.toLowerCase() === name)?.[1].join(', ')
}

const body = (result: unknown) => result as { statusCode: number; body: string; isBase64Encoded?: boolean }

describe.skipIf(backend === undefined)('makeHttpHandler replays what the function answered (Postgres)', () => {
  const { store } = backend!
  afterAll(() => backend?.close())

  /** A function answering `answer`, counting its runs; warnings go to `warnings`. */
  function fn(answer: () => unknown) {
    let runs = 0
    const warnings: WarningEvent[] = []
    const events = createEventStream()
    events.subscribe((event) => void (event.type === 'warning' && warnings.push(event)))
    const handler = makeHttpHandler(
      async () => {
        runs++
        return answer()
      },
      { store, scope: () => 'acct', events, replayHeaders: [...DEFAULT_REPLAY_HEADERS, 'x-note'] },
    )
    return { handler, runs: () => runs, warnings }
  }

  /** The first answer and its retry's, under one new key. */
  async function twice(format: HttpFormat, handler: (event: LambdaHttpEvent, context: ReturnType<typeof lambdaContext>) => Promise<unknown>) {
    const event = httpEvent(format, { key: `"${randomUUID()}"`, body: REQUEST_BODY })
    const first = await handler(event, lambdaContext(30_000))
    const replay = await handler(event, lambdaContext(30_000))
    return { first, replay }
  }

  for (const format of HTTP_FORMATS) {
    describe(format, () => {
      it('a header value with a space after it, and Unicode text, are stored as they read back: the retry replays 201 with them, not 500 outcome-unreadable', async () => {
        const { handler, runs } = fn(() => resultOf(format, 201, { 'cache-control': 'no-store ', 'content-disposition': DISPOSITION, 'content-type': 'application/pdf' }, 'JVBERi0=', true))
        const { first, replay } = await twice(format, handler)
        expect(body(first).statusCode).toBe(201)
        expect(body(replay).statusCode).toBe(201)
        expect(headerOf(replay, 'idempotent-replayed')).toBe('true')
        expect(headerOf(replay, 'cache-control')).toBe('no-store')
        expect(headerOf(replay, 'content-disposition')).toBe(DISPOSITION)
        expect([body(replay).body, body(replay).isBase64Encoded]).toEqual(['JVBERi0=', true])
        expect(runs()).toBe(1)
      })

      it('a header no HTTP answer carries (CR LF in its value) is left out of the stored form, and warned of once: the replay goes without it', async () => {
        const { handler, runs, warnings } = fn(() => resultOf(format, 201, { 'x-note': 'one\r\nSet-Cookie: two', location: '/orders/7' }, '{}'))
        const { replay } = await twice(format, handler)
        await twice(format, handler)
        expect([body(replay).statusCode, headerOf(replay, 'location'), headerOf(replay, 'x-note')]).toEqual([201, '/orders/7', undefined])
        expect(warnings.map((warning) => warning.code)).toEqual(['header-not-stored'])
        expect(warnings[0]!.message).toContain('"x-note"')
        expect(runs()).toBe(2)
      })

      it('a body answered as text replays as text, whatever its type (none, JSON, NDJSON); one answered as base64 replays as base64, UTF-8 or not', async () => {
        const json = JSON.stringify({ id: 7, name: 'ünïcødé' })
        const answers: Array<[Record<string, string>, string, boolean | undefined]> = [
          [{}, json, undefined],
          [{ 'content-type': 'application/json' }, json, false],
          [{ 'content-type': 'application/x-ndjson' }, `${json}\n${json}\n`, undefined],
          [{ 'content-type': 'application/json' }, Buffer.from(json).toString('base64'), true],
          [{ 'content-type': 'image/png' }, Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0xff]).toString('base64'), true],
        ]
        for (const [headers, text, isBase64Encoded] of answers) {
          const { handler } = fn(() => resultOf(format, 201, headers, text, isBase64Encoded))
          const { first, replay } = await twice(format, handler)
          expect(first).toMatchObject({ statusCode: 201, body: text })
          expect(headerOf(replay, 'idempotent-replayed')).toBe('true')
          expect([body(replay).body, body(replay).isBase64Encoded], JSON.stringify(headers)).toEqual([text, isBase64Encoded === true])
        }
      })

      it('a row the Lambda front end wrote before #44, a value with a space after it, replays trimmed', async () => {
        const key = randomUUID()
        const fingerprint = fingerprintRequest({ method: 'POST', route: '/orders', body: REQUEST_BODY, contentType: 'application/json' })
        const row = { status: 201, v: 2, headers: ['cache-control', 'no-store ', 'content-disposition', DISPOSITION], text: '{"id":7}' }
        await createIdem({ store }).run({ scope: 'acct', key, fingerprint }, () => row)
        const { handler, runs } = fn(() => resultOf(format, 500, {}, 'not run'))
        const replay = await handler(httpEvent(format, { key: `"${key}"`, body: REQUEST_BODY }), lambdaContext(30_000))
        expect([body(replay).statusCode, headerOf(replay, 'cache-control'), headerOf(replay, 'content-disposition')]).toEqual([201, 'no-store', DISPOSITION])
        expect([body(replay).body, body(replay).isBase64Encoded]).toEqual(['{"id":7}', false])
        expect(runs()).toBe(0)
      })
    })
  }

  it('2.0: a bare value is answered again as that value, so API Gateway answers the retry as it answered the first: a string is not JSON-quoted', async () => {
    for (const value of ['Hello from Lambda!', { orderId: 'o-1', items: [1, 2], note: null }, 42, [true, 'two']]) {
      const { handler, runs } = fn(() => value)
      const { first, replay } = await twice('v2', handler)
      expect(first).toEqual(value)
      expect(replay).toEqual(value)
      expect(runs()).toBe(1)
    }
  })

  it('2.0: a bare value replayed to a REST API or an ALB, which take none, is the 200 JSON API Gateway made of it', async () => {
    const key = `"${randomUUID()}"`
    const { handler, runs } = fn(() => 'Hello from Lambda!')
    expect(await handler(httpEvent('v2', { key, body: REQUEST_BODY }), lambdaContext(30_000))).toBe('Hello from Lambda!')
    for (const format of ['v1', 'alb'] as const) {
      const replay = await handler(httpEvent(format, { key, body: REQUEST_BODY }), lambdaContext(30_000))
      expect([body(replay).statusCode, headerOf(replay, 'content-type'), body(replay).body]).toEqual([200, 'application/json', '"Hello from Lambda!"'])
    }
    expect(runs()).toBe(1)
  })
})
