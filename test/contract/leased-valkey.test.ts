// The Redis store's contracts on Valkey 8.1 (the first with SET … IFEQ), built from
// Debian trixie's source by tools/valkey/build.sh, through every client.
import { randomBytes } from 'node:crypto'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLeasedIdem } from '../../src/index.js'
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

// Valkey 8.1 has SET … IFEQ: a fresh call's completion is a plain command too, no script.
describe.skipIf(valkey === undefined)('protocol v3 on Valkey 8.1', () => {
  it('a fresh call is two plain commands: SET … NX PX … GET, then SET … IFEQ; a replay one', async () => {
    const client = new Redis((valkey as TestValkey).url)
    const sent: string[][] = []
    const original = client.sendCommand.bind(client)
    client.sendCommand = ((command: { name: string; args: unknown[] }, ...rest: unknown[]) => {
      sent.push([command.name.toLowerCase(), ...command.args.map(String)])
      return (original as (...args: unknown[]) => unknown)(command, ...rest)
    }) as typeof client.sendCommand
    try {
      const idem = createLeasedIdem({ store: redisStore({ client, prefix: `idem-test:valkey-ifeq:${randomBytes(4).toString('hex')}:` }) })
      await idem.run({ scope: 'acct', key: 'warm-up', input: 1 }, async () => 1)
      sent.splice(0)
      await idem.run({ scope: 'acct', key: 'k', input: 1 }, async () => ({ ok: true }))
      const fresh = sent.splice(0)
      expect(fresh.map(([name]) => name)).toEqual(['set', 'set'])
      expect(fresh[0]!.slice(3)).toEqual(['NX', 'PX', '5000', 'GET'])
      expect(fresh[1]![3]).toBe('IFEQ')
      expect(fresh[1]![4]).toBe(fresh[0]![2])
      expect((await idem.run({ scope: 'acct', key: 'k', input: 1 }, async () => ({ ok: false }))).replayed).toBe(true)
      expect(sent.map(([name]) => name)).toEqual(['set'])
    } finally {
      client.disconnect()
    }
  })
})
