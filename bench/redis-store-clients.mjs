// bench:redis-clients (bench/redis-store-clients.mjs): the Redis store through each client
// it takes, side by side, no HTTP: a fresh key's claim and complete (protocol v3: SET NX
// PX GET, then SET IFEQ or the compare-and-set script; two round trips), 16 at a time, on
// ioredis and iovalkey (with and without enableAutoPipelining) and node-redis 4, 5 and 6
// (which write the commands of one tick together by themselves; 6 speaks RESP3). Prints
// operations per second and machine CPU per operation, by process (the bench's share is
// the client's), then RATIO lines per client against ioredis with autopipelining (what
// docs/leased.md recommended until node-redis was measured beside it): by throughput, and
// by the client's CPU; and the floor under the store: its two commands sent by hand
// through ioredis (autopipelining) and node-redis 6, with RATIO lines of the store against
// them.
// Build first (`npm run build`): this runs over dist/.
import { randomUUID } from 'node:crypto'
import { Redis as IoRedis } from 'ioredis'
import { Redis as ValkeyRedis } from 'iovalkey'
import * as redis4 from 'redis4'
import * as redis5 from 'redis5'
import * as redis6 from 'redis'
import { cpuLedger, dropRedisKeys, interleaved, ratio, throughput } from './support.mjs'

const REDIS_URL = process.env.IDEM_BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379'
const SECONDS = Number(process.env.BENCH_SECONDS ?? 2)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5)
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16)

const loopback = (url) => /^redis:\/\/(127\.0\.0\.1|localhost|\[::1\])(:\d+)?(\/\d*)?$/.test(url)
if (!loopback(REDIS_URL)) throw new Error(`bench:redis-clients runs against a loopback Redis only, got ${REDIS_URL}`)

const { redisStore } = await import('../dist/stores/redis/index.js')

const node = async (lib) => {
  const client = lib.createClient({ url: REDIS_URL })
  await client.connect()
  return { client, close: () => (typeof client.destroy === 'function' ? client.destroy() : client.disconnect()) }
}
const io = async (Redis, options) => {
  const client = new Redis(REDIS_URL, options)
  return { client, close: () => client.disconnect() }
}
const clients = {
  ioredis: await io(IoRedis, {}),
  ioredis_auto: await io(IoRedis, { enableAutoPipelining: true }),
  iovalkey: await io(ValkeyRedis, {}),
  iovalkey_auto: await io(ValkeyRedis, { enableAutoPipelining: true }),
  node_redis4: await node(redis4),
  node_redis5: await node(redis5),
  node_redis6: await node(redis6),
}

const prefix = `idem-bench:clients:${process.pid}:`
const outcome = JSON.stringify({ status: 201, body: '{"chargeId":"ch_1","amount":1000}' })
const fingerprint = 'f'.repeat(64)
const variants = Object.fromEntries(
  Object.entries(clients).map(([name, { client }]) => {
    const store = redisStore({ client, prefix: `${prefix}${name}:` })
    return [
      name,
      async (i) => {
        const key = `k-${i}`
        const claim = await store.claim('bench', key, fingerprint, 5_000, 60_000)
        if (claim.state !== 'acquired') throw new Error(`${name}: ${key} ${claim.state}`)
        if (!(await claim.lease.complete(outcome, 60_000))) throw new Error(`${name}: ${key} not completed`)
      },
    ]
  }),
)

// The floor under the store on the two fastest-to-slowest clients: the same two commands
// (SET NX PX GET, then the compare-and-set script; IFEQ where the server has it is not
// assumed) sent by hand through ioredis's `call` and node-redis's `sendCommand`.
const { SCRIPTS } = await import('../dist/stores/redis/scripts.js')
const swapSha = String(await clients.ioredis.client.call('SCRIPT', 'LOAD', SCRIPTS.idemSwapV3))
const byHand = (send) => async (i) => {
  const key = `${prefix}hand:{bench:k-${i}}:claim`
  const held = `3h ${randomUUID()} ${fingerprint}`
  if ((await send(['set', key, held, 'NX', 'PX', '5000', 'GET'])) !== null) throw new Error(`${key} held`)
  if ((await send(['evalsha', swapSha, '1', key, held, `3c ${fingerprint.length} ${fingerprint}${outcome}`, '60000'])) !== 'OK') throw new Error(`${key} not completed`)
}
variants.ioredis_auto_by_hand = byHand((command) => clients.ioredis_auto.client.call(...command))
variants.node_redis6_by_hand = byHand((command) => clients.node_redis6.client.sendCommand(command))

try {
  console.log(`bench:redis-clients: a fresh key's claim and complete through redisStore, ${CONCURRENCY} at a time, ${ROUNDS} × ${SECONDS} s per client`)
  let offset = 0
  // Warm-up: the server check, the scripts cached, the connections' buffers grown.
  for (const op of Object.values(variants)) await throughput((i) => op(i + (offset += 1_000_000)), { concurrency: CONCURRENCY, ms: 300 })
  const machine = cpuLedger({ [process.pid]: 'bench' })
  const rates = await interleaved(variants, ROUNDS, (op, name) =>
    machine.record(name, () => throughput((i) => op(i + (offset += 1_000_000)), { concurrency: CONCURRENCY, ms: SECONDS * 1000 })),
  )
  for (const [name, rate] of Object.entries(rates)) console.log(`  ${name.padEnd(14)} ${rate.toFixed(0).padStart(6)} claim+complete/s`)
  machine.print('claim+complete')
  for (const name of ['ioredis_auto', 'node_redis6']) {
    ratio(`redis_clients.${name}_vs_by_hand`, rates[name] / rates[`${name}_by_hand`])
    ratio(`redis_clients.cpu.${name}_vs_by_hand`, machine.micros(name, 'bench') / machine.micros(`${name}_by_hand`, 'bench'))
  }
  for (const name of Object.keys(clients)) {
    if (name === 'ioredis_auto') continue
    ratio(`redis_clients.${name}_vs_ioredis_auto`, rates[name] / rates.ioredis_auto)
    ratio(`redis_clients.cpu.${name}_vs_ioredis_auto`, machine.micros(name, 'bench') / machine.micros('ioredis_auto', 'bench'))
  }
} finally {
  await dropRedisKeys(clients.ioredis.client, prefix)
  for (const { close } of Object.values(clients)) await close()
}
