// What bench:peers runs, as data: the frameworks, the variants and which frameworks each
// runs on, the Redis clients of idem's Redis variants, the peers as installed, and the
// notes on how each peer is set up (or why it cannot run somewhere).
import { CLIENTS, FRAMEWORKS, ONLY } from './settings.mjs'

export const FRAMEWORK_LABELS = { express4: 'Express 4', express5: 'Express 5', fastify: 'Fastify 5', hono: 'Hono' }
const EXPRESS = ['express4', 'express5']
const ALL = Object.keys(FRAMEWORK_LABELS)

/**
 * Every variant: `on` the frameworks it runs on; `clients`, for idem's Redis variants, the
 * Redis clients it runs on (one server each); `keyed` sends keys; `peer` marks the other
 * libraries (on each framework, the best of them is the target).
 */
export const VARIANTS = {
  unprotected: { label: 'unprotected (no key)', on: ALL },
  hand_written: { label: 'hand-written key row (Postgres tx)', keyed: true, on: ALL },
  idem_pg: { label: 'idem, Postgres (transactional)', keyed: true, on: ALL },
  idem_redis: { label: 'idem, Redis (leased), as written', keyed: true, on: ALL, clients: CLIENTS },
  idem_redis_prescribed: { label: 'idem, Redis, derived key + upsert', keyed: true, on: ALL, clients: CLIENTS },
  // "As written" on ioredis without enableAutoPipelining: what docs/leased.md's recommendation is worth.
  idem_redis_plain_client: { label: 'idem, Redis (leased), as written', keyed: true, on: EXPRESS, clients: ['ioredis-plain'] },
  node_idempotency: { label: '@node-idempotency/core + Redis', keyed: true, peer: true, on: [...EXPRESS, 'fastify'] },
  nestjs: { label: '@node-idempotency/nestjs + Redis', keyed: true, peer: true, on: [...EXPRESS, 'fastify'] },
  express_idempotency: { label: 'express-idempotency + Redis', keyed: true, peer: true, on: EXPRESS },
  powertools: { label: 'Powertools, Redis, 5 s lease', keyed: true, peer: true, on: [...EXPRESS, 'fastify'] },
}
/** The variants the RATIO lines set against the best peer. */
export const AGAINST_PEERS = ['idem_redis', 'idem_redis_prescribed']

/** A server's row label: the variant's, and its Redis client. */
export const labelOf = (server) => `${VARIANTS[server.variant].label}${server.client === undefined ? '' : ` [${server.client}]`}`

/** One entry per server to run: framework × variant × client, as PEERS_FRAMEWORKS, PEERS_VARIANTS and PEERS_CLIENTS select. */
export function serversToRun() {
  const servers = []
  for (const framework of FRAMEWORKS) {
    if (!(framework in FRAMEWORK_LABELS)) throw new Error(`PEERS_FRAMEWORKS: ${framework} is not one of ${ALL.join(', ')}`)
    for (const [variant, { on, clients }] of Object.entries(VARIANTS)) {
      if (!on.includes(framework) || (ONLY !== undefined && !ONLY.includes(variant) && variant !== 'unprotected')) continue
      for (const client of clients ?? [undefined]) {
        const slug = [framework, client, variant].filter((part) => part !== undefined).join('.')
        servers.push({ order: servers.length, framework, variant, client, slug, issued: 0, stored: [], replayed: 0, samples: { fresh: [], replay: [] }, replayRows: 0, profiles: [] })
      }
    }
  }
  return servers
}

/** The peers as installed in bench/peers/node_modules, with what they declare they run on. */
export const PEERS = [
  ['@node-idempotency/core', '@node-idempotency/storage-adapter-redis', 'redis'],
  ['@node-idempotency/nestjs', '@nestjs/core', '@nestjs/common', 'rxjs'],
  ['express-idempotency', 'express-idempotency-redis-adapter'],
  ['@aws-lambda-powertools/idempotency', '@redis/client'],
]
export const NOTES = [
  '@node-idempotency/express, which the core README names, is not on the npm registry: the core is glued to Express and to Fastify as that README describes (onRequest, the route, onResponse).',
  '@node-idempotency/nestjs needs Nest (@nestjs/common, @nestjs/core, rxjs) installed but not a Nest app: its interceptor is constructed and called with an ExecutionContext and CallHandler of two lines each (server-kit.mjs), with Express\u2019s request and response, or Fastify\u2019s request and reply as Nest\u2019s Fastify platform gives them; Nest\u2019s own router is not measured.',
  'express-idempotency does not run on Fastify: it is Express middleware that learns the route\u2019s response by replacing Express\u2019s res.send, which a Fastify reply never calls.',
  'Powertools runs outside Lambda with makeIdempotent and a fake context whose getRemainingTimeInMillis() gives the 5 s in-progress expiry; body validation is off (2.35.0\u2019s Redis layer answers every replay 422 with it: PEERS_POWERTOOLS_VALIDATE=1 shows it).',
  'On Hono only idem\u2019s variants run: none of the peers is Hono middleware.',
  'idem\u2019s Redis variants run once per Redis client (PEERS_CLIENTS), and on Express also on ioredis without autopipelining; the peers use the Redis clients their adapters ship with.',
]
