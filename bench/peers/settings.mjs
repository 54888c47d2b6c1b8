// bench:peers's settings (environment; docs/benchmarks.md lists them) and the names its
// run uses (the Postgres schema, the Redis key prefix), shared by its modules.
const env = process.env
export const QUICK = env.PEERS_QUICK === '1'
export const ROUNDS = Number(env.PEERS_ROUNDS ?? (QUICK ? 1 : 5))
export const SECONDS = Number(env.PEERS_SECONDS ?? (QUICK ? 1 : 5))
export const WARM_UP_SECONDS = Number(env.PEERS_WARM_UP_SECONDS ?? 1)
export const CONNECTIONS = Number(env.PEERS_CONNECTIONS ?? 16)
export const RACE_KEYS = Number(env.PEERS_RACE_KEYS ?? (QUICK ? 5 : 20))
export const RACE_COPIES = Number(env.PEERS_RACE_COPIES ?? (QUICK ? 20 : 50))
export const CRASH_WAIT_S = Number(env.PEERS_CRASH_WAIT_S ?? (QUICK ? 10 : 40))
export const FRAMEWORKS = (env.PEERS_FRAMEWORKS ?? 'express4,express5,fastify,hono').split(',')
/** The Redis clients idem's Redis variants run on (names in ../redis-clients.mjs); the ratios are per client. */
export const CLIENTS = (env.PEERS_CLIENTS ?? 'ioredis,node-redis').split(',')
export const ONLY = env.PEERS_VARIANTS?.split(',')
// A directory: each server's CPU is profiled over its measured runs (not the warm-up),
// only fresh requests are sent, the scenarios are skipped, and the split of each server's
// CPU by part is printed (profile-split.mjs).
export const PROFILE = env.PEERS_PROFILE
export const PG_URL = env.IDEM_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
export const REDIS_URL = env.IDEM_BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379'
export const POOL_SIZE = Number(env.PEERS_POOL_SIZE ?? 16)

export const ORDER = { customer: 'c_42', amount: 1250, currency: 'EUR', items: [{ sku: 'A-1', qty: 2 }] }
export const BODY = JSON.stringify(ORDER)
export const HEADERS = { 'content-type': 'application/json' }

export const RUN = `idem-bench-peers-${process.pid}`
export const PREFIX = `${RUN}:`
export const SCHEMA = `idem_bench_peers_${process.pid}`

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
