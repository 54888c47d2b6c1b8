// The documented responses are what the middleware really sends. A Hono app (through
// @hono/zod-openapi and idem's route helper, on the memory store, and on a Postgres store
// whose server is not there) is described, and then, for every problem the document
// lists, a request provokes it: its status is documented for the route, its body
// validates against the documented schema (ajv, on the dereferenced document), it is
// application/problem+json, and it carries Retry-After exactly where the document says.
// A replay carries the documented Idempotent-Replayed header. The same on the leased
// engine, with its 409 `lease-lost`: openapi-responses.leased.test.ts.
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi'
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import { idempotencyWithOpenApi } from '../../src/http/documents/openapi/hono.js'
import { memoryStore } from '../../src/stores/memory/index.js'
import { postgresStore } from '../../src/stores/postgres/index.js'
import { documentedResponses, itAnswersTheSharedProblems, expectValidOpenApi } from './support/openapi.js'


type Json = Record<string, any>
const DEADLINE_MS = 500
const MAX_BODY_BYTES = 64

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void
  const promise = new Promise<void>((r) => (resolve = r))
  return { promise, resolve }
}

// Nothing listens on port 1: connecting is refused at once, as with a Postgres that is down.
const absentPool = new pg.Pool({ connectionString: 'postgres://postgres@127.0.0.1:1/test', connectionTimeoutMillis: 2_000 })
absentPool.on('error', () => {})
afterAll(() => absentPool.end())

const entered = deferred()
const release = deferred()
afterAll(() => release.resolve())

const hono = new OpenAPIHono()
const idem = idempotencyWithOpenApi(hono, { store: memoryStore(), scope: () => 'acct', deadlineMs: DEADLINE_MS, maxBodyBytes: MAX_BODY_BYTES })
const down = idempotencyWithOpenApi(hono, { store: postgresStore({ pool: absentPool }), scope: () => 'acct' })
const Order = z.object({ id: z.string() })
const created = { 201: { description: 'Created', content: { 'application/json': { schema: Order } } } }

hono.openapi(idem.route(createRoute({ method: 'post', path: '/orders', responses: created })), (c) => c.json({ id: '1' }, 201))
// Holds its key until released: the duplicate meanwhile is in flight, and past the deadline the request overran.
hono.openapi(idem.route(createRoute({ method: 'post', path: '/slow', responses: created })), async (c) => {
  entered.resolve()
  await release.promise
  return c.json({ id: 'slow' }, 201)
})
hono.openapi(down.route(createRoute({ method: 'post', path: '/payments', responses: created })), (c) => c.json({ id: 'p' }, 201))

const document = hono.getOpenAPI31Document({ openapi: '3.1.0', info: { title: 'Orders', version: '1' } }) as Json
const responses = await documentedResponses(document)
const { dereferenced, expectDocumented: check, expectEveryProblemProvoked } = responses

function send(path: string, key: string | undefined, body = '{}'): Promise<Response> {
  return Promise.resolve(
    hono.request(path, { method: 'POST', headers: { 'content-type': 'application/json', ...(key === undefined ? {} : { 'idempotency-key': key }) }, body }),
  )
}

describe('the documented problems are the ones the middleware sends', () => {
  it('the document is valid OpenAPI 3.1', async () => {
    await expectValidOpenApi(document)
  })

  itAnswersTheSharedProblems(responses, send, MAX_BODY_BYTES)

  it('409 in-flight, then 503 overran for the request held past deadlineMs', async () => {
    const first = send('/slow', '"k-slow"')
    await entered.promise
    await check('/slow', await send('/slow', '"k-slow"'), 'in-flight')
    await check('/slow', await first, 'overran')
  })

  it('503 store-unavailable', async () => {
    await check('/payments', await send('/payments', '"k-503"'), 'store-unavailable')
  })

  it('every problem the document lists was provoked, under its documented status', () => {
    expectEveryProblemProvoked()
  })
})
