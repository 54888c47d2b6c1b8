// The documented responses are what the middleware really sends, on the leased engine. A
// Hono app protected by createLeasedIdem over Redis (and over a Redis that is not there)
// is described with idem/openapi/hono; its document lists 409 `lease-lost` beside the
// problems of a transactional app, and every problem it lists is provoked through real
// requests and checked against the document as openapi-responses.test.ts does.
//
// `lease-lost`: the first request's route runs while its lease's renewals are cut (as if
// this holder could not reach Redis for them), so its lease runs out in Redis after
// LEASE_MS; a retry with the same key, waiting for the key, takes it over, runs the route
// and stores its 201. When the first route then returns, Redis refuses its completion
// (its claim was taken over) and the client is answered 409 `lease-lost`; a retry gets the
// taker's response.
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi'
import { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import { createLeasedIdem, type LeasedStore } from '../../src/index.js'
import { idempotencyWithOpenApi } from '../../src/http/documents/openapi/hono.js'
import { redisStore } from '../../src/stores/redis/index.js'
import { testRedis } from '../leased/support.js'
import { withLeases } from '../support/leases.js'
import { documentedResponses, itAnswersTheSharedProblems, expectDescribed, expectValidOpenApi } from './support/openapi.js'

type Json = Record<string, any>
// A cut holder loses its lease LEASE_MS after its claim. A renewed one renews every
// HEARTBEAT_MS, so it keeps its key through a stall of up to LEASE_MS - HEARTBEAT_MS.
const LEASE_MS = 600
const HEARTBEAT_MS = 100
// A duplicate polls this long: past a cut holder's lease (with the polls' backoff, up to
// 250 ms between two), and for as long as a renewed holder keeps the key, then 409 in-flight.
const WAIT_MS = 1_200
// Longer than a takeover (the lease, then the taker's poll).
const DEADLINE_MS = 2_000
// The tests that wait for the timings above: a hang fails the test rather than the run.
const TIMED_TEST_MS = 10_000
const MAX_BODY_BYTES = 64

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void
  const promise = new Promise<void>((r) => (resolve = r))
  return { promise, resolve }
}

/**
 * The store, with the renewals of one holder cut: the first holder of a key in `cutKeys`
 * has every renewal fail, as if it could not reach the store for them, so its lease runs
 * out while its route runs. Everything else, its completion included, reaches the store.
 */
function renewalsCut(store: LeasedStore, cutKeys: Set<string>): LeasedStore {
  return withLeases(store, (_lease, _scope, key) => (cutKeys.delete(key) ? { renew: () => Promise.reject(new Error('renewal cut by the test')) } : {}))
}

const redis = await testRedis('openapi-leased')
afterAll(() => redis?.drop())

// Nothing listens on port 1: every connection is refused, and without the offline queue
// every command fails at once, as with a Redis that is down.
const absent = new Redis(1, '127.0.0.1', { enableOfflineQueue: false })
absent.on('error', () => {})
afterAll(() => absent.disconnect())

const cutKeys = new Set<string>()
const slowEntered = deferred()
const slowRelease = deferred()
const lostEntered = deferred()
const lostRelease = deferred()
afterAll(() => {
  slowRelease.resolve()
  lostRelease.resolve()
})
let lostRuns = 0

const hono = new OpenAPIHono()
const Order = z.object({ id: z.string() })
const created = { 201: { description: 'Created', content: { 'application/json': { schema: Order } } } }
if (redis !== undefined) {
  const engine = createLeasedIdem({ store: renewalsCut(redisStore({ client: redis.client, prefix: redis.prefix }), cutKeys), leaseMs: LEASE_MS, heartbeatMs: HEARTBEAT_MS })
  const idem = idempotencyWithOpenApi(hono, { idem: engine, scope: () => 'acct', waitMs: WAIT_MS, deadlineMs: DEADLINE_MS, maxBodyBytes: MAX_BODY_BYTES })
  const down = idempotencyWithOpenApi(hono, { idem: createLeasedIdem({ store: redisStore({ client: absent }) }), scope: () => 'acct' })

  hono.openapi(idem.route(createRoute({ method: 'post', path: '/orders', responses: created })), (c) => c.json({ id: '1' }, 201))
  // Holds its key, renewed, until released: the duplicate meanwhile is in flight, and past the deadline the request overran.
  hono.openapi(idem.route(createRoute({ method: 'post', path: '/slow', responses: created })), async (c) => {
    slowEntered.resolve()
    await slowRelease.promise
    return c.json({ id: 'slow' }, 201)
  })
  // The first run holds its key until released (its renewals cut); a run after it answers at once.
  hono.openapi(idem.route(createRoute({ method: 'post', path: '/charges', responses: created })), async (c) => {
    const run = ++lostRuns
    if (run === 1) {
      lostEntered.resolve()
      await lostRelease.promise
    }
    return c.json({ id: `run-${run}` }, 201)
  })
  hono.openapi(down.route(createRoute({ method: 'post', path: '/payments', responses: created })), (c) => c.json({ id: 'p' }, 201))
}

const document = hono.getOpenAPI31Document({ openapi: '3.1.0', info: { title: 'Orders', version: '1' } }) as Json
const responses = await documentedResponses(document)
const { dereferenced, expectDocumented: check, expectEveryProblemProvoked } = responses

function send(path: string, key: string | undefined, body = '{}'): Promise<Response> {
  return Promise.resolve(
    hono.request(path, { method: 'POST', headers: { 'content-type': 'application/json', ...(key === undefined ? {} : { 'idempotency-key': key }) }, body }),
  )
}

describe.skipIf(redis === undefined)('the documented problems are the ones the middleware sends, on the leased engine (Redis)', () => {
  it('the document is valid OpenAPI 3.1, and lists lease-lost under 409', async () => {
    await expectValidOpenApi(document)
    expectDescribed(document, ['POST /orders', 'POST /slow', 'POST /charges', 'POST /payments'])
    expect(dereferenced.components.schemas.Problem.properties.code.enum).toContain('lease-lost')
    expect(dereferenced.paths['/charges'].post.responses['409'].content['application/problem+json'].schema.allOf[1].properties.code.enum).toEqual([
      'in-flight',
      'lease-lost',
    ])
  })

  itAnswersTheSharedProblems(responses, send, MAX_BODY_BYTES)

  it('409 in-flight after waitMs beside a holder that renews its lease, then 503 overran for the request held past deadlineMs', async () => {
    const first = send('/slow', '"k-slow"')
    await slowEntered.promise
    await check('/slow', await send('/slow', '"k-slow"'), 'in-flight')
    await check('/slow', await first, 'overran')
  }, TIMED_TEST_MS)

  it('409 lease-lost: the route whose lease ran out while it ran, after a retry took its key over', async () => {
    cutKeys.add('k-lost')
    const first = send('/charges', '"k-lost"')
    await lostEntered.promise
    // The retry waits for the key until the cut lease runs out, then takes it over and runs the route.
    const taker = await send('/charges', '"k-lost"')
    expect(taker.status).toBe(201)
    expect(taker.headers.get('idempotent-replayed')).toBeNull()
    expect(await taker.json()).toEqual({ id: 'run-2' })
    // The first route answers now; its completion is refused, and its 201 never reaches the client.
    lostRelease.resolve()
    const lost = await check('/charges', await first, 'lease-lost')
    expect(lost.detail).toMatch(/was not stored: another call took the key over/)
    expect(lostRuns).toBe(2)
    // What the document tells the client to do: retry with the same key, and get the taker's response.
    const retry = await send('/charges', '"k-lost"')
    expect(retry.status).toBe(201)
    expect(retry.headers.get('idempotent-replayed')).toBe('true')
    expect(await retry.json()).toEqual({ id: 'run-2' })
    expect(lostRuns).toBe(2)
  }, TIMED_TEST_MS)

  it('503 store-unavailable', async () => {
    await check('/payments', await send('/payments', '"k-503"'), 'store-unavailable')
  })

  it('every problem the document lists was provoked, under its documented status', () => {
    expectEveryProblemProvoked()
  })
})
