// Property (#44): whatever a route answers with the values its platform lets it set
// (Node's setHeader on Express; a Web Headers on the Fetch front end), its retry never
// fails and gets the same status, the header values as the stored form's rule makes them
// and the same body bytes. Fresh answer then replay through the public middleware over
// Postgres: Express on a real server (the Node exchange every Node adapter shares), the
// Fetch middleware in process (the Web exchange Hono shares).
import express from 'express'
import fc from 'fast-check'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { randomUUID } from 'node:crypto'
import { afterAll, describe, expect, it } from 'vitest'
import { createEventStream } from '../../src/core/events.js'
import { idempotency as expressIdempotency } from '../../src/http/adapters/express/index.js'
import { idempotency as fetchIdempotency } from '../../src/http/fetch/index.js'
import { headerFields, REPLAYED_NAMES, replayedFields, replayedValue, storedStatus, VALUE_UNITS } from '../support/header-fields.js'
import { postgresBackend } from './support/backends.js'
import { httpCall } from './support/frontends.js'

const backend = await postgresBackend('idem_http_replay_property')
const NO_BODY = new Set([204, 205, 304])
const RUNS = 100

/** What the route answers: a status, header fields, and a body of bytes or text. */
interface Answer {
  status: number
  fields: Array<[string, string]>
  body: Uint8Array | string
}

function answers(units: fc.Arbitrary<string>): fc.Arbitrary<Answer> {
  const body = fc.oneof(fc.uint8Array({ maxLength: 64 }), fc.string({ unit: 'grapheme', maxLength: 32 }))
  return fc.record({ status: storedStatus, fields: headerFields(units), body })
}

/** What a client reads of the allow-listed fields of a response: each name's value as `get` joins it, Set-Cookie as a list. */
function readFields(headers: Headers): Array<[string, string | string[] | null]> {
  return REPLAYED_NAMES.map((name) => [name, name === 'set-cookie' ? headers.getSetCookie() : headers.get(name)])
}

/**
 * What a client over Node's http reads of fields kept apart (Node's response keeps them
 * so, and so does the stored form): each as the stored form's rule makes it, a repeated
 * one joined with `, ` (Node's client) and trimmed (a Web Headers takes it so).
 */
function readOverNode(fields: Answer['fields']): Array<[string, string | string[] | null]> {
  const replayed = replayedFields(fields)
  const joined = (values: string[] | undefined) => (values === undefined ? null : values.join(', ').replace(/^[\t ]+|[\t ]+$/g, ''))
  return REPLAYED_NAMES.map((name) => [name, name === 'set-cookie' ? (replayed.get(name) ?? []) : joined(replayed.get(name))])
}

/**
 * What a replay carries of a Web Headers' fields: a Headers holds one value a name (its
 * fields joined), Set-Cookie apart, each as the stored form's rule makes it; a value it
 * leaves out (a control character) is not replayed.
 */
function replayedOfHeaders(headers: Headers): Array<[string, string | string[] | null]> {
  return readFields(headers).map(([name, value]) => {
    if (Array.isArray(value)) return [name, value.map(replayedValue).filter((cookie) => cookie !== null)]
    return [name, value === null ? null : replayedValue(value)]
  })
}

const bytes = (body: Answer['body']): Buffer => Buffer.from(body)

describe.skipIf(backend === undefined)('property: a route is answered again what it answered (Postgres)', () => {
  const { store } = backend!
  afterAll(() => backend?.close())
  // Fields left out are warned of; the property looks at the replays, not the log.
  const events = createEventStream()
  events.subscribe(() => {})

  it('Express (the Node exchange): the replay never fails, and carries the same status, header values and body bytes', async () => {
    let answer: Answer | undefined
    let runs = 0
    const app = express()
    app.use(expressIdempotency({ store, scope: () => 'acct', replayHeaders: REPLAYED_NAMES, events }))
    app.post('/orders', (_req, res) => {
      runs++
      res.status(answer!.status)
      // Node's own appendHeader: Express's append replaces an empty value before it.
      for (const [name, value] of answer!.fields) res.appendHeader(name, value)
      res.end(answer!.body)
    })
    const server = http.createServer(app)
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const { port } = server.address() as AddressInfo
    try {
      await fc.assert(
        fc.asyncProperty(answers(VALUE_UNITS.node), async (generated) => {
          answer = generated
          runs = 0
          const call = { path: '/orders', key: `"${randomUUID()}"`, contentType: 'application/json', body: '{}' }
          const first = await httpCall(port, call)
          const firstBody = Buffer.from(await first.arrayBuffer())
          const replay = await httpCall(port, call)
          expect([runs, replay.status, replay.headers.get('idempotent-replayed')]).toEqual([1, generated.status, 'true'])
          // Node's setHeader takes no value the stored form leaves out: the first answer's fields, as read, are the replay's.
          expect(readFields(first.headers)).toEqual(readOverNode(generated.fields))
          expect(readFields(replay.headers)).toEqual(readOverNode(generated.fields))
          expect(Buffer.from(await replay.arrayBuffer()).equals(firstBody)).toBe(true)
          expect(firstBody.equals(NO_BODY.has(generated.status) ? Buffer.alloc(0) : bytes(generated.body))).toBe(true)
        }),
        { numRuns: RUNS },
      )
    } finally {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  })

  it('the Fetch middleware (the Web exchange): the replay never fails, and carries the same status, header values and body bytes', async () => {
    const protect = fetchIdempotency({ store, scope: () => 'acct', replayHeaders: REPLAYED_NAMES, events })
    await fc.assert(
      fc.asyncProperty(answers(VALUE_UNITS.web), async (generated) => {
        let runs = 0
        const route = async (): Promise<Response> => {
          runs++
          const headers = new Headers()
          for (const [name, value] of generated.fields) headers.append(name, value)
          return new Response(NO_BODY.has(generated.status) ? null : generated.body, { status: generated.status, headers })
        }
        const key = `"${randomUUID()}"`
        const request = () => new Request('http://test.local/orders', { method: 'POST', headers: { 'idempotency-key': key, 'content-type': 'application/json' }, body: '{}' })
        const first = await protect(request(), route)
        const firstBody = Buffer.from(await first.arrayBuffer())
        const replay = await protect(request(), route)
        expect([runs, replay.status, replay.headers.get('idempotent-replayed')]).toEqual([1, generated.status, 'true'])
        // A Headers holds control characters the stored form leaves out: the replay goes without those fields.
        expect(readFields(replay.headers)).toEqual(replayedOfHeaders(first.headers))
        expect(Buffer.from(await replay.arrayBuffer()).equals(firstBody)).toBe(true)
        expect(firstBody.equals(NO_BODY.has(generated.status) ? Buffer.alloc(0) : bytes(generated.body))).toBe(true)
      }),
      { numRuns: RUNS },
    )
  })
})
