import { describe } from 'vitest'
import { redisInboxKey, type RedisStore, type RedisTx } from '../../src/stores/redis/index.js'
import { inboxTableContract, leasedStoreContract } from '../../src/testing/index.js'
import { itFulfils } from './contract.js'

/** What the Redis contracts run on: the store (made once the suite starts) and one that cannot reach Redis. */
export interface RedisContractHarness {
  store: RedisStore
  unavailableStore(): RedisStore
}

/**
 * Registers the leased and inbox contracts on a Redis store. The inbox's effects are
 * `INCR`s of `<prefix>effect:{<id>}`, counted through `checker` (a client of the test's
 * own: the count never depends on the client under test).
 */
export function itFulfilsRedisContracts(harness: () => RedisContractHarness, prefix: string, checker: () => { get(key: string): Promise<string | null> }): void {
  describe('leased (LeasedStore)', () => itFulfils(leasedStoreContract(harness)))
  describe('inbox (InboxTable, commands staged in the message slot)', () =>
    itFulfils(
      inboxTableContract(() => ({
        ...harness(),
        writeEffect: (tx: RedisTx) => tx.call('INCR', tx.key(`${prefix}effect:`)),
        countEffects: async (id: string) => Number((await checker().get(redisInboxKey(`${prefix}effect:`, id))) ?? 0),
      })),
    ))
}
