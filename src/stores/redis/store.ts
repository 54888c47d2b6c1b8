import { InvalidOptionError } from '../../core/errors/invalid-option.js'
import { assertDuration, assertKnownOptions, optionNames } from '../../core/errors/option-checks.js'
import { redisAdapter } from './adapter.js'
import { Caller, scriptCall } from './caller.js'
import { redisInboxTable } from './inbox-table.js'
import { DEFAULT_REDIS_HOLD_MS, DEFAULT_REDIS_PREFIX, DEFAULT_REDIS_TIMEOUT_MS, type RedisStore, type RedisStoreOptions } from './options.js'
import { Protocol, redisKeys } from './protocol.js'
import { replicaWait } from './replicas.js'
import { MAX_OUTCOME_BYTES } from '../max-outcome.js'

const OPTIONS = optionNames<RedisStoreOptions>({ client: true, prefix: true, timeoutMs: true, holdMs: true, waitForReplicas: true })

/**
 * The leased store on Redis, in protocol v3 (docs/redis-protocol.md): a key's claim is
 * one string value. A fresh call costs two round trips, each one plain command or the
 * smallest script (the claim, `SET … NX PX … GET`; the completion, `SET … IFEQ` on
 * Redis 8.4 or Valkey 8.1 and later, a compare-and-set script before), a replay one,
 * and a call that runs longer than `heartbeatMs` one renewal per beat. A key's claim
 * and steps share a Cluster hash tag, so the store works on Redis Cluster too. It also serves the inbox
 * (`inbox`: message ids, with handlers that stage Redis commands in the message's slot,
 * committed by one script with the id; see `RedisTx`).
 *
 * Durability is Redis's: with no persistence a restart forgets every key (and the
 * next call for a key runs again); use AOF (`appendfsync everysec` or `always`) where
 * that matters. Replication is asynchronous, so a failover can lose what the primary
 * alone acknowledged and run a key twice, unless `waitForReplicas` is set.
 *
 * The client is node-redis's, ioredis's or iovalkey's (see `RedisStoreOptions.client`);
 * node-redis costs the least CPU (docs/leased.md has the numbers). Give an ioredis client
 * `enableAutoPipelining: true` in a server: the commands of concurrent calls are then
 * written to the socket together, as node-redis does by itself.
 *
 * @example
 * import { createClient } from 'redis'
 * const store = redisStore({ client: await createClient({ url: process.env.REDIS_URL }).connect(), prefix: 'myapp:idem:' })
 * const idem = createLeasedIdem({ store })
 * // ioredis:
 * import { Redis } from 'ioredis'
 * const onIoredis = redisStore({ client: new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { enableAutoPipelining: true }), prefix: 'myapp:idem:' })
 * // With a replica: nothing idem acknowledges is on the primary alone.
 * const replicated = redisStore({ client: new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'), waitForReplicas: { count: 1, timeoutMs: 100 } })
 */
export function redisStore(options: RedisStoreOptions): RedisStore {
  if (options === null || typeof options !== 'object') throw new InvalidOptionError('redisStore: pass { client }')
  assertKnownOptions('redisStore', options, OPTIONS)
  const { client, prefix = DEFAULT_REDIS_PREFIX, timeoutMs = DEFAULT_REDIS_TIMEOUT_MS, holdMs = DEFAULT_REDIS_HOLD_MS } = options
  const adapter = redisAdapter(client, 'redisStore: option "client"')
  if (typeof prefix !== 'string' || /[{}]/.test(prefix)) {
    throw new InvalidOptionError('redisStore: option "prefix" must be a string without "{" or "}" (they would break the Cluster hash tag)')
  }
  assertDuration('redisStore: option "timeoutMs"', timeoutMs, 1)
  assertDuration('redisStore: option "holdMs"', holdMs, 3)
  const wait = replicaWait(options.waitForReplicas, timeoutMs)
  const caller = new Caller(adapter, timeoutMs, wait)
  const scripts = scriptCall(caller)
  const protocol = new Protocol(caller, scripts, prefix, wait !== undefined)
  return {
    name: 'redis',
    maxOutcomeBytes: MAX_OUTCOME_BYTES,
    prefix,
    keysOf: (scope, key) => redisKeys(prefix, scope, key),
    inbox: redisInboxTable(scripts, prefix, holdMs, wait !== undefined),
    // Bound: a claim runs the protocol's code alone.
    claim: protocol.claim.bind(protocol),
    peek: protocol.peek.bind(protocol),
  }
}
