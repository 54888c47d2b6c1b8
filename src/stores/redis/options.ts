import type { KeyPeek } from '../../ports/key-peek.js'
import type { LeasedStore } from '../../ports/leased-store.js'
import type { WithInboxTable } from '../../ports/inbox-table.js'
import type { RedisTx } from './inbox-table.js'
import type { RedisKeys } from './keys.js'
import type { RedisWaitForReplicas } from './replicas.js'
import type { RedisClient } from './types.js'

/** Where the store's keys live by default. */
export const DEFAULT_REDIS_PREFIX = 'idem:'
/** How long one store call may take before `StoreUnavailableError`, by default. */
export const DEFAULT_REDIS_TIMEOUT_MS = 1_000
/** How long an inbox delivery's claim on its message id holds without renewal, by default. */
export const DEFAULT_REDIS_HOLD_MS = 30_000

/** What `redisStore` takes: the client, the key prefix, the per-command timeout, the inbox's hold and whether writes wait for replicas. */
export interface RedisStoreOptions {
  /**
   * The client: an ioredis (5 or 6) or iovalkey `Redis` or `Cluster`, or a node-redis
   * (`redis` 4, 5 or 6) `createClient()` or `createCluster()` client, connected (node-redis
   * clients are connected by you: `await client.connect()`). The store never closes it.
   * At its first use it reads the server's version once (`INFO server`): Redis 7.0 or
   * later, or Valkey.
   */
  client: RedisClient
  /** Prepended to every key; may not contain `{` or `}`. Give each app (or test run) its own. @default 'idem:' */
  prefix?: string
  /**
   * How long one call may wait for Redis (connecting included) before it fails with
   * `StoreUnavailableError`, whatever the client's own retry settings. @default 1000
   */
  timeoutMs?: number
  /**
   * How long an inbox delivery's claim on its message id holds without renewal. An open
   * delivery renews it every third of this; a consumer that crashed mid-message keeps
   * the id from other deliveries this long. @default 30000
   */
  holdMs?: number
  /**
   * Wait for replicas to acknowledge each write a later call relies on (the claim, its
   * renewals, steps and completion; an inbox delivery's begin, commit and failure
   * count) with Redis's `WAIT`, in the same round trip, and treat fewer
   * acknowledgements as `StoreUnavailableError`: then a failover that promotes one of
   * those replicas loses nothing idem acknowledged. Without it a write the primary
   * acknowledged but had not yet sent to a replica is lost by such a failover, and the
   * key can run again (see docs/guarantees.md). @default off: the primary's
   * acknowledgement is enough
   */
  waitForReplicas?: RedisWaitForReplicas
}

/**
 * The leased-engine store on Redis: one script per step, so a claim, a renewal or a
 * commit is one round trip; also the inbox's id table (a handler's commands staged and
 * committed with the id by one script).
 */
export interface RedisStore extends LeasedStore, WithInboxTable<RedisTx>, KeyPeek {
  readonly prefix: string
  /** The keys holding `(scope, key)`, for inspection and tests. */
  keysOf(scope: string, key: string): RedisKeys
}
