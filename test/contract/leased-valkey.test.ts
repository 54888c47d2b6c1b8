// The Redis store's contracts on Valkey 8.1 (the first with SET … IFEQ), built from
// Debian trixie's source by tools/valkey/build.sh, through every client.
import { randomBytes } from 'node:crypto'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe } from 'vitest'
import { redisStore, type RedisStore } from '../../src/stores/redis/index.js'
import { HEALTHY_STORE_TIMEOUT_MS } from '../support/contract.js'
import { itFulfilsRedisContracts } from '../support/redis-contracts.js'
import { redisClients } from '../support/redis-clients.js'
import { startValkey, type TestValkey } from '../support/valkey.js'

const valkey = await startValkey()
const clients = redisClients()
// What the tests count effects with.
const checker = valkey === undefined ? undefined : new Redis(valkey.url)
afterAll(async () => {
  checker?.disconnect()
  await clients.close()
  await valkey?.stop()
})

describe.skipIf(valkey === undefined).each(clients.kinds)('redis store contracts on Valkey 8.1 through $name', (kind) => {
  const prefix = `idem-test:valkey:${randomBytes(4).toString('hex')}:`
  let store: RedisStore
  beforeAll(async () => {
    store = redisStore({ client: await kind.connect((valkey as TestValkey).url), prefix, timeoutMs: HEALTHY_STORE_TIMEOUT_MS })
  })
  const unavailableStore = () => redisStore({ client: kind.unreachable(), prefix, timeoutMs: 300 })
  itFulfilsRedisContracts(() => ({ store, unavailableStore }), prefix, () => checker!)
})
