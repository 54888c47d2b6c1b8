// Property (#44): whatever a function behind API Gateway or an ALB answers (any status
// that is stored, header fields with spaces around their values, empty, repeated, in any
// case, with Unicode text, control characters or lone surrogates, a body as text or as
// base64, and on payload 2.0 a bare value), its retry never fails and gets the same
// status, the header values as the stored form's rule makes them, and the same body in
// the same form. Fresh answer then replay, through makeHttpHandler on Postgres, in each
// of Lambda's HTTP formats.
import fc from 'fast-check'
import { randomUUID } from 'node:crypto'
import { afterAll, describe, expect, it } from 'vitest'
import { createEventStream } from '../../src/core/events.js'
import { makeHttpHandler, type LambdaHttpEvent } from '../../src/lambda/index.js'
import { headerFields, REPLAYED_NAMES, replayedFields, storedStatus, VALUE_UNITS } from '../support/header-fields.js'
import { postgresBackend } from '../http/support/backends.js'
import { HTTP_FORMATS, httpEvent, lambdaContext, type HttpFormat } from './support.js'

const backend = await postgresBackend('lambda_replay_property')
const NO_BODY = new Set([204, 205, 304])
const RUNS = 200

/** A body as the function answers it: text, or bytes (any, or UTF-8 text) in base64. */
const answeredBody = fc.oneof(
  fc.tuple(fc.string({ unit: VALUE_UNITS.lambda, maxLength: 64 }), fc.constantFrom(undefined, false)).map(([body, isBase64Encoded]) => ({ body, isBase64Encoded })),
  fc.uint8Array({ maxLength: 64 }).map((bytes) => ({ body: Buffer.from(bytes).toString('base64'), isBase64Encoded: true })),
  fc.string({ unit: 'binary', maxLength: 32 }).map((text) => ({ body: Buffer.from(text).toString('base64'), isBase64Encoded: true })),
)

type Fields = Array<[string, string]>

/** The function's result in `format`, and the header fields it states, in the order API Gateway reads them. */
function resultOf(format: HttpFormat, status: number, fields: Fields, answer: { body: string; isBase64Encoded: boolean | undefined }): { result: object; stated: Fields } {
  const encoded = answer.isBase64Encoded === undefined ? {} : { isBase64Encoded: answer.isBase64Encoded }
  if (format === 'v2') {
    // One value a name (2.0 has no multi-value headers); cookies apart.
    const headers: Record<string, string> = {}
    for (const [name, value] of fields) if (name.toLowerCase() !== 'set-cookie') headers[name] = value
    const cookies = fields.filter(([name]) => name.toLowerCase() === 'set-cookie').map(([, value]) => value)
    const stated: Fields = [...Object.entries(headers), ...cookies.map((value): [string, string] => ['set-cookie', value])]
    return { result: { statusCode: status, headers, cookies, body: answer.body, ...encoded }, stated }
  }
  const multiValueHeaders: Record<string, string[]> = {}
  for (const [name, value] of fields) (multiValueHeaders[name] ??= []).push(value)
  const stated = Object.entries(multiValueHeaders).flatMap(([name, values]) => values.map((value): [string, string] => [name, value]))
  const statusDescription = format === 'alb' ? { statusDescription: `${status}` } : {}
  return { result: { statusCode: status, ...statusDescription, multiValueHeaders, body: answer.body, ...encoded }, stated }
}

/** A result's header fields by name (lower case), a repeated field's values as a client reads them. */
function fieldsOf(result: unknown): Map<string, string[]> {
  const { headers = {}, multiValueHeaders = {}, cookies = [] } = result as { headers?: Record<string, string>; multiValueHeaders?: Record<string, string[]>; cookies?: string[] }
  const byName = new Map<string, string[]>()
  const add = (name: string, values: string[]) => byName.set(name.toLowerCase(), [...(byName.get(name.toLowerCase()) ?? []), ...values])
  for (const [name, value] of Object.entries(headers)) add(name, [value])
  for (const [name, values] of Object.entries(multiValueHeaders)) add(name, values)
  if (cookies.length > 0) add('set-cookie', cookies)
  byName.delete('idempotent-replayed')
  return byName
}

/** What a client reads of fields: a repeated field joined with `, `, Set-Cookie as a list. */
const asRead = (fields: Map<string, string[]>) => [...fields].map(([name, values]) => [name, name === 'set-cookie' ? values : values.join(', ')]).sort()

describe.skipIf(backend === undefined)('property: a Lambda function is answered again what it answered (Postgres)', () => {
  const { store } = backend!
  afterAll(() => backend?.close())
  // Fields left out are warned of; the property looks at the replays, not the log.
  const quiet = createEventStream()
  quiet.subscribe(() => {})

  /** The function's answer, then its retry's: the retry must not run the function. */
  async function freshThenReplay(format: HttpFormat, result: unknown): Promise<{ first: unknown; replay: unknown }> {
    let runs = 0
    const handler = makeHttpHandler(
      async () => {
        runs++
        return result
      },
      { store, scope: () => 'acct', replayHeaders: REPLAYED_NAMES, events: quiet },
    )
    const event: LambdaHttpEvent = httpEvent(format, { key: `"${randomUUID()}"`, body: '{}' })
    const first = await handler(event, lambdaContext(30_000))
    const replay = await handler(event, lambdaContext(30_000))
    expect(runs).toBe(1)
    return { first, replay }
  }

  for (const format of HTTP_FORMATS) {
    it(`${format}: the replay never fails, and carries the same status, the stored header values and the same body in the same form`, async () => {
      await fc.assert(
        fc.asyncProperty(storedStatus, headerFields(VALUE_UNITS.lambda), answeredBody, async (status, fields, answer) => {
          const { result, stated } = resultOf(format, status, fields, answer)
          const { first, replay } = await freshThenReplay(format, result)
          expect(first).toBe(result)
          const replayed = replay as { statusCode: number; body: string; isBase64Encoded: boolean }
          expect(replayed.statusCode).toBe(status)
          expect(asRead(fieldsOf(replay))).toEqual(asRead(replayedFields(stated)))
          const [body, isBase64Encoded] = NO_BODY.has(status) ? ['', false] : [answer.isBase64Encoded === true ? answer.body : answer.body.toWellFormed(), answer.isBase64Encoded === true]
          expect([replayed.body, replayed.isBase64Encoded]).toEqual([body, isBase64Encoded])
        }),
        { numRuns: RUNS },
      )
    })
  }

  it('v2: a bare value (no statusCode) is answered again as the same value', async () => {
    await fc.assert(
      fc.asyncProperty(fc.jsonValue(), async (value) => {
        // A value with a statusCode member is a structured result: not this property's.
        fc.pre(value === null || typeof value !== 'object' || !('statusCode' in value))
        const { first, replay } = await freshThenReplay('v2', value)
        expect(first).toBe(value)
        expect(replay).toEqual(JSON.parse(JSON.stringify(value)))
      }),
      { numRuns: RUNS },
    )
  })
})
