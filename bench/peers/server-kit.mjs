// What every bench:peers server shares, whatever its framework: the Postgres pool, the
// route's one INSERT (or the prescribed upsert), the counting and the crash point of the
// scenarios, idem's leased engine on the variant's Redis client, and the peers' glue as
// functions of a plain request (`answer`s: { status, headers?, body }), so that Express
// and Fastify send the same answers from the same code.
import pg from 'pg'
import { fingerprintOf, handWrittenKeys } from '../hand-written.mjs'
import { REDIS_CLIENTS } from '../redis-clients.mjs'

export const {
  PEERS_FRAMEWORK: framework,
  PEERS_VARIANT: variant,
  PEERS_CLIENT: clientName,
  PEERS_SCHEMA: schema,
  PEERS_PREFIX: prefix,
  PEERS_CRASH_REF: crashRef,
  PEERS_PG_URL: pgUrl,
  PEERS_REDIS_URL: redisUrl,
} = process.env
const POOL_SIZE = Number(process.env.PEERS_POOL_SIZE ?? 16)
export const SCOPE = 'acct_bench'
// What Powertools reads from the Lambda context: the in-progress record's expiry, i.e. its lease.
const POWERTOOLS_LEASE_MS = Number(process.env.PEERS_POWERTOOLS_LEASE_MS ?? 5_000)

/** Run at exit (all at once). */
export const closers = []

// Connections close after 2 s idle: every variant has its own process and pool, more
// than Postgres's max_connections if all stayed open, and only one variant runs at a time.
export const pool = new pg.Pool({ connectionString: pgUrl, max: POOL_SIZE, idleTimeoutMillis: 2_000, connectionTimeoutMillis: 10_000 })
// An idle connection Postgres drops must not end the server (and idem warns about a pool without this).
pool.on('error', (error) => console.error(`${framework}.${variant}: idle Postgres connection failed: ${error.message}`))
closers.push(() => pool.end())
const INSERT = `INSERT INTO "${schema}".orders (body) VALUES ($1) RETURNING id`
// The effect as the leased docs prescribe: keyed by an id derived from the idempotency key, upserted.
const UPSERT =
  `INSERT INTO "${schema}".orders_keyed (effect_key, body) VALUES ($1, $2) ` +
  'ON CONFLICT (effect_key) DO UPDATE SET effect_key = EXCLUDED.effect_key RETURNING id'

/** Runs of the route per `x-bench-ref`, read by the scenarios over IPC. */
export const runs = new Map()
/** Counts a scenario request's run of the route (requests without a ref cost one header lookup). */
function counted(ref) {
  if (ref !== undefined) runs.set(ref, (runs.get(ref) ?? 0) + 1)
}
/** The crash of the crash scenario: after the INSERT, before anything is stored or answered. */
function crashPoint(ref) {
  if (crashRef !== undefined && ref === crashRef) process.kill(process.pid, 'SIGKILL')
}
/** The route's work: one INSERT, on `db` (the pool or a transaction's client). */
export async function insertOrder(db, body, ref) {
  counted(ref)
  const { rows } = await db.query(INSERT, [body])
  crashPoint(ref)
  return { id: rows[0].id }
}
/** The route's work made idempotent as docs/leased.md prescribes: upserted under a derived key. */
export async function upsertOrder(db, effectKey, body, ref) {
  counted(ref)
  const { rows } = await db.query(UPSERT, [effectKey, body])
  crashPoint(ref)
  return { id: rows[0].id }
}

/** idem's leased engine on Redis with its defaults (the lease included), on the variant's client (PEERS_CLIENT). */
export async function leasedIdem() {
  const client = REDIS_CLIENTS[clientName]
  if (client === undefined) throw new Error(`PEERS_CLIENT: one of ${Object.keys(REDIS_CLIENTS).join(', ')}`)
  const { createLeasedIdem } = await import('../../dist/index.js')
  const { redisStore } = await import('../../dist/stores/redis/index.js')
  const connected = await client.connect(redisUrl)
  closers.push(() => connected.close())
  return createLeasedIdem({ store: redisStore({ client: connected.client, prefix }) })
}

/** The hand-written key row around the route's INSERT: `request` is { key, method, path, text (the body as sent), body, ref }. */
export function handWritten() {
  const hand = handWrittenKeys({ pool, schema })
  return async ({ key, method, path, text, body, ref }) => {
    if (key === undefined) return { status: 400, body: JSON.stringify({ error: 'Idempotency-Key is required' }) }
    const fingerprint = fingerprintOf(method, path, text)
    return hand.handle({ scope: SCOPE, key, fingerprint }, async (client) => ({ status: 201, body: JSON.stringify(await insertOrder(client, body, ref)) }))
  }
}

// @node-idempotency/core, glued to a framework as its README describes (onRequest before
// the route, onResponse after it; @node-idempotency/express is not on the npm registry),
// with its Redis storage adapter; errors mapped to statuses as the library's own nestjs
// wrapper maps them. `request` is { headers, body, path, method, ref }.
export async function nodeIdempotency() {
  const { Idempotency, IdempotencyError } = await import('@node-idempotency/core')
  const { RedisStorageAdapter } = await import('@node-idempotency/storage-adapter-redis')
  const storage = new RedisStorageAdapter({ url: redisUrl })
  await storage.connect()
  closers.push(() => storage.disconnect())
  const idempotency = new Idempotency(storage, { cacheKeyPrefix: `${prefix}node-idempotency` })
  const STATUS = { IDEMPOTENCY_FINGERPRINT_MISSMATCH: 422, IDEMPOTENCY_KEY_LEN_EXEEDED: 400, IDEMPOTENCY_KEY_MISSING: 400, REQUEST_IN_PROGRESS: 409 }
  return async ({ ref, ...request }) => {
    let cached
    try {
      cached = await idempotency.onRequest(request)
    } catch (error) {
      if (!(error instanceof IdempotencyError)) throw error
      const headers = error.code === 'REQUEST_IN_PROGRESS' ? { 'retry-after': '1' } : {}
      return { status: STATUS[error.code] ?? 500, headers, body: { error: error.message } }
    }
    if (cached !== undefined) return { status: cached.additional.status, headers: { 'idempotent-replayed': 'true' }, body: cached.body }
    const body = await insertOrder(pool, request.body, ref)
    await idempotency.onResponse(request, { body, additional: { status: 201 } })
    return { status: 201, body }
  }
}

// @node-idempotency/nestjs's interceptor without a Nest application: constructed as
// Nest's injector would (Reflector, storage, options) and called with the two things
// it uses of Nest, an ExecutionContext (switchToHttp, getHandler, getClass) and a
// CallHandler (handle() → Observable of the route's result). The framework's route then
// does what Nest's router does around interceptors: the status set before (201, Nest's
// default for POST), the Observable's last value awaited and sent as JSON, an
// HttpException sent with its status. The interceptor reads and writes the framework's
// own request and response (Express's, or Fastify's as on Nest's Fastify platform).
// What is measured is the interceptor, not Nest's own router.
export async function nestjs() {
  await import('reflect-metadata')
  const { Reflector } = await import('@nestjs/core')
  const { HttpException } = await import('@nestjs/common')
  const { from, lastValueFrom } = await import('rxjs')
  const { NodeIdempotencyInterceptor, buildStorageAdapter } = await import('@node-idempotency/nestjs')
  const storage = await buildStorageAdapter({ adapter: 'redis', options: { url: redisUrl } })
  closers.push(() => storage.disconnect())
  const interceptor = new NodeIdempotencyInterceptor(new Reflector(), storage, { cacheKeyPrefix: `${prefix}nestjs` })
  class OrdersController {}
  function createOrder() {}
  /** `route()` is the route's work; resolves with the body, and the status when an HttpException set it. */
  return async (req, res, route) => {
    const context = {
      switchToHttp: () => ({ getRequest: () => req, getResponse: () => res }),
      getHandler: () => createOrder,
      getClass: () => OrdersController,
    }
    try {
      return { body: await (await lastValueFrom(await interceptor.intercept(context, { handle: () => from(route()) }))) }
    } catch (error) {
      if (!(error instanceof HttpException)) throw error
      return { status: error.getStatus(), body: { error: error.message } }
    }
  }
}

// Powertools for AWS Lambda's idempotency outside Lambda: makeIdempotent over a
// function (event, context), its Redis persistence layer (CachePersistenceLayer with a
// connected @redis/client), the key taken from the event's `key` (the header). The
// body is not validated by default: with payloadValidationJmesPath, 2.35.0's Redis layer
// answers every retry of a completed key as a mismatch (its update of the record on
// completion drops the validation hash), so the same key with another body gets the
// stored result; PEERS_POWERTOOLS_VALIDATE=1 turns validation on to see it. Outside
// Lambda the in-progress record has no expiry unless a context gives the remaining time:
// the fake context below gives POWERTOOLS_LEASE_MS, which is the lease after which a
// crashed call's key is taken over. `request` is { key, body, ref }.
export async function powertools() {
  const { makeIdempotent, IdempotencyConfig, IdempotencyAlreadyInProgressError, IdempotencyValidationError } = await import('@aws-lambda-powertools/idempotency')
  const { CachePersistenceLayer } = await import('@aws-lambda-powertools/idempotency/cache')
  const { createClient } = await import('@redis/client')
  const client = await createClient({ url: redisUrl }).connect()
  closers.push(() => client.quit())
  const persistenceStore = new CachePersistenceLayer({ client })
  const validate = process.env.PEERS_POWERTOOLS_VALIDATE === '1'
  const config = new IdempotencyConfig({ eventKeyJmesPath: 'key', ...(validate && { payloadValidationJmesPath: 'body' }) })
  const lambdaContext = { functionName: 'orders', getRemainingTimeInMillis: () => POWERTOOLS_LEASE_MS }
  const createOrder = makeIdempotent(async (event) => insertOrder(pool, event.body, event.ref), { persistenceStore, config, keyPrefix: `${prefix}powertools` })
  return async (event) => {
    if (event.key === undefined) return { status: 400, body: { error: 'Idempotency-Key is required' } }
    try {
      return { status: 201, body: await createOrder(event, lambdaContext) }
    } catch (error) {
      if (error instanceof IdempotencyAlreadyInProgressError) return { status: 409, headers: { 'retry-after': '1' }, body: { error: error.message } }
      if (error instanceof IdempotencyValidationError) return { status: 422, body: { error: error.message } }
      throw error
    }
  }
}
