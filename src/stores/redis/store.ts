import { InvalidOptionError } from '../../core/errors/invalid-option.js'
import { assertDuration, assertKnownOptions, optionNames } from '../../core/validate.js'
import type { KeyPeek, PeekResult } from '../../core/dual-read.js'
import { NO_STEPS, type LeaseClaim, type LeasedStore } from '../../core/leased/store.js'
import type { WithInboxTable } from '../../ports/inbox-table.js'
import { redisAdapter } from './adapter.js'
import { scriptCaller } from './calls.js'
import { redisInboxTable, type RedisTx } from './inbox-table.js'
import { redisKeys, type RedisKeys } from './keys.js'
import { replicaWait, type RedisWaitForReplicas } from './replicas.js'
import { MAX_OUTCOME_BYTES } from '../max-outcome.js'
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

type Reply = unknown

const OPTIONS = optionNames<RedisStoreOptions>({ client: true, prefix: true, timeoutMs: true, holdMs: true, waitForReplicas: true })

/**
 * The leased store on Redis. Each transition is one Lua script, so it is atomic; a
 * fresh call costs two round trips (claim, complete), a replay one, and a call that
 * runs longer than `heartbeatMs` one renewal per beat. A key's claim and steps share a
 * Cluster hash tag, so the store works on Redis Cluster too. It also serves the inbox
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
  const send = scriptCaller(adapter, timeoutMs, wait)
  // With WAIT, a claim that finds the key completed writes the record's state again, so
  // that its WAIT covers the record: a replay never serves what the primary alone holds.
  const confirmCompleted = wait === undefined ? '0' : '1'

  const keysOf = (scope: string, key: string): RedisKeys => redisKeys(prefix, scope, key)

  const store: RedisStore = {
    name: 'redis',
    maxOutcomeBytes: MAX_OUTCOME_BYTES,
    prefix,
    keysOf,
    inbox: redisInboxTable(send, prefix, holdMs, wait !== undefined),
    claim(scope, key, fingerprint, leaseMs, ttlMs) {
      return send('claim', 'idemLeaseClaimV1', keysOf(scope, key), [fingerprint, leaseMs, ttlMs, confirmCompleted], toClaim, (claim) => {
        // Nobody will run under this claim: hand it back rather than leave the key in
        // flight until the lease runs out.
        if (claim.state === 'acquired') store.release(scope, key, claim.token).catch(() => {})
      })
    },
    renew(scope, key, token, leaseMs) {
      return send('renew', 'idemLeaseRenewV1', keysOf(scope, key), [String(token), leaseMs], toBoolean)
    },
    saveStep(scope, key, token, name, result) {
      return send('saveStep', 'idemLeaseSaveStepV1', keysOf(scope, key), [String(token), name, result], toBoolean)
    },
    complete(scope, key, token, outcome, ttlMs) {
      return send('complete', 'idemLeaseCompleteV1', keysOf(scope, key), [String(token), outcome, ttlMs], toBoolean)
    },
    release(scope, key, token) {
      return send('release', 'idemLeaseReleaseV1', keysOf(scope, key), [String(token)], toBoolean)
    },
    peek(scope, key) {
      return send('peek', 'idemLeasePeekV1', keysOf(scope, key), [], toPeek)
    },
  }
  return store
}

function toClaim(reply: Reply): LeaseClaim {
  const [state, ...rest] = reply as [string, ...unknown[]]
  switch (state) {
    case 'acquired': {
      const [token, flat] = rest as [string, string[]]
      if (flat.length === 0) return { state: 'acquired', token: Number(token), steps: NO_STEPS }
      const steps = new Map<string, string>()
      for (let i = 0; i < flat.length; i += 2) steps.set(flat[i]!, flat[i + 1]!)
      return { state: 'acquired', token: Number(token), steps }
    }
    case 'completed': {
      const [fingerprint, outcome] = rest as [string, string]
      return { state: 'completed', record: { fingerprint, outcome } }
    }
    case 'running':
      return { state: 'running', fingerprint: rest[0] as string }
    default:
      throw new Error(`The claim script returned an unexpected reply: ${JSON.stringify(reply)}`)
  }
}

function toPeek(reply: Reply): PeekResult {
  const [state, fingerprint, outcome] = reply as [string, string?, string?]
  if (state === 'completed') return { state, record: { fingerprint: fingerprint!, outcome: outcome! } }
  if (state === 'held' || state === 'absent') return { state }
  throw new Error(`The peek script returned an unexpected reply: ${JSON.stringify(reply)}`)
}

function toBoolean(reply: Reply): boolean {
  return reply === 1
}
