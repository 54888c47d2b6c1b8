import { InvalidOptionError } from '../../core/errors/invalid-option.js'
import { StoreUnavailableError } from '../../core/errors/store-unavailable.js'
import { assertDuration, assertKnownOptions, optionNames } from '../../core/validate.js'
import type { KeyPeek, PeekResult } from '../../core/dual-read.js'
import type { LeaseClaim, LeasedStore } from '../../core/leased/store.js'
import type { WithInboxTable } from '../../ports/inbox-table.js'
import { INBOX_SCRIPTS, type InboxScriptName } from './inbox-scripts.js'
import { redisInboxTable, type RedisTx } from './inbox-table.js'
import { CommandDeadlines } from './deadlines.js'
import { toClaim } from './lease.js'
import { redisKeys, type RedisKeys } from './keys.js'
import { replicaWait, waitedScripts, type RedisWaitForReplicas } from './replicas.js'
import { SCRIPTS, type ScriptName } from './scripts.js'
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
   * An ioredis `Redis` or `Cluster`. The store defines its scripts on it
   * (`idemLease*V1` commands) and never closes it.
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
type ScriptCall = (...args: Array<string | number>) => Promise<Reply>

const OPTIONS = optionNames<RedisStoreOptions>({ client: true, prefix: true, timeoutMs: true, holdMs: true, waitForReplicas: true })

/**
 * The scripts `waitForReplicas` waits for: the writes a later call relies on, and the
 * reads an answer is made of. A lost claim or renewal lets a second caller run beside a
 * holder that was told it holds the key; a lost step runs again; a lost completion runs
 * the key again, and so would one replayed before a failover lost it (a claim finding
 * the key completed); a lost inbox commit (the handler's commands with the id) loses a
 * message the broker was told is done, and so would a delivery dropped as a duplicate of
 * a commit a failover lost (a begin finding the id processed); a lost failure count
 * gives a message one attempt more. Not waited for: releases (losing one only keeps a
 * key held until its lease runs out) and an inbox hold's renewals (losing one lets a
 * second delivery start, and the commit is fenced).
 */
const WAITED: ReadonlySet<ScriptName | InboxScriptName> = new Set([
  'idemLeaseClaimV1',
  'idemLeaseRenewV1',
  'idemLeaseSaveStepV1',
  'idemLeaseCompleteV1',
  'idemInboxBeginV1',
  'idemInboxCommitV1',
  'idemInboxFailureV1',
])

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
 * Give the client `enableAutoPipelining: true` in a server: the commands of concurrent
 * calls are then written to the socket together (docs/leased.md has the numbers).
 *
 * @example
 * import { Redis } from 'ioredis'
 * const store = redisStore({ client: new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { enableAutoPipelining: true }), prefix: 'myapp:idem:' })
 * const idem = createLeasedIdem({ store })
 * // With a replica: nothing idem acknowledges is on the primary alone.
 * const replicated = redisStore({ client: new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'), waitForReplicas: { count: 1, timeoutMs: 100 } })
 */
export function redisStore(options: RedisStoreOptions): RedisStore {
  if (options === null || typeof options !== 'object') throw new InvalidOptionError('redisStore: pass { client }')
  assertKnownOptions('redisStore', options, OPTIONS)
  const { client, prefix = DEFAULT_REDIS_PREFIX, timeoutMs = DEFAULT_REDIS_TIMEOUT_MS, holdMs = DEFAULT_REDIS_HOLD_MS } = options
  if (client === null || typeof client !== 'object' || typeof client.defineCommand !== 'function') {
    throw new InvalidOptionError('redisStore: option "client" must be an ioredis Redis or Cluster client')
  }
  if (typeof prefix !== 'string' || /[{}]/.test(prefix)) {
    throw new InvalidOptionError('redisStore: option "prefix" must be a string without "{" or "}" (they would break the Cluster hash tag)')
  }
  assertDuration('redisStore: option "timeoutMs"', timeoutMs, 1)
  assertDuration('redisStore: option "holdMs"', holdMs, 3)
  const wait = replicaWait(options.waitForReplicas, client, timeoutMs)
  for (const [name, lua] of Object.entries(SCRIPTS)) client.defineCommand(name, { lua, numberOfKeys: 2 })
  // The inbox's scripts take their number of keys first: a commit names the handler's keys too.
  for (const [name, lua] of Object.entries(INBOX_SCRIPTS)) client.defineCommand(name, { lua })
  const commands = client as unknown as Record<ScriptName | InboxScriptName, ScriptCall>
  const waited = wait === undefined ? undefined : waitedScripts({ ...SCRIPTS, ...INBOX_SCRIPTS }, wait)
  const required = wait?.count ?? 0
  const waitMs = wait?.timeoutMs ?? 0
  // With WAIT, a claim that finds the key completed writes the record's state again, so
  // that its WAIT covers the record: a replay never serves what the primary alone holds.
  const confirmCompleted = wait === undefined ? '0' : '1'

  // The client's own command timeout, when it is no longer than ours, already fails a
  // command (queued while connecting included) in time: then the store keeps no clock.
  const clientTimeoutMs = commandTimeoutOf(client)
  const deadlines = clientTimeoutMs !== undefined && clientTimeoutMs <= timeoutMs ? undefined : new CommandDeadlines(timeoutMs)

  /**
   * Runs one script with a deadline (and, for the writes in WAITED, its WAIT). A reply
   * the caller will not act on is handed to `abandoned`: it came after the deadline (the
   * caller was told the store is unavailable, but the script ran), or too few replicas
   * acknowledged it. Under the client's own `commandTimeout` ioredis drops a late reply,
   * and a claim that landed late is left to its lease.
   */
  function send<T>(
    operation: string,
    script: ScriptName | InboxScriptName,
    keys: RedisKeys | string[],
    args: Array<string | number>,
    decode: (reply: Reply) => T,
    abandoned?: (value: T) => void,
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const deadline = deadlines?.watch(() => reject(new StoreUnavailableError(`Redis did not answer ${operation} within ${timeoutMs} ms (timeoutMs)`)))
      // False once the deadline passed: the caller has been answered.
      const inTime = (): boolean => deadlines === undefined || deadline === undefined || deadlines.settle(deadline)
      dispatch(
        script,
        keys,
        args,
        (raw, acks) => {
          // Late: the caller was told the store is unavailable, but the script ran.
          const late = !inTime()
          let value: T
          try {
            value = decode(raw)
          } catch (error) {
            if (!late) reject(unavailable(error))
            return
          }
          if (late) {
            abandoned?.(value)
          } else if (acks < required) {
            abandoned?.(value)
            reject(
              new StoreUnavailableError(
                `Redis replicas did not acknowledge ${operation}: ${acks} of ${required} within ${waitMs} ms (waitForReplicas); a failover may lose it`,
              ),
            )
          } else {
            resolve(value)
          }
        },
        (error) => {
          if (inTime()) reject(unavailable(error))
        },
      )
    })
  }

  /** Sends one script (with its WAIT, for the writes in WAITED); its reply and acknowledgements go to `answer`, any failure to `fail`. */
  function dispatch(
    script: ScriptName | InboxScriptName,
    keys: RedisKeys | string[],
    args: Array<string | number>,
    answer: (raw: Reply, acks: number) => void,
    fail: (error: unknown) => void,
  ): void {
    try {
      if (waited !== undefined && WAITED.has(script)) {
        waited(script, Array.isArray(keys) ? keys : [keys.claim, keys.steps], args).then(([raw, acks]) => answer(raw, acks), fail)
      } else {
        const sent = Array.isArray(keys) ? commands[script](keys.length, ...keys, ...args) : commands[script](keys.claim, keys.steps, ...args)
        sent.then((raw) => answer(raw, required), fail)
      }
    } catch (error) {
      fail(error)
    }
  }

  const keysOf = (scope: string, key: string): RedisKeys => redisKeys(prefix, scope, key)

  const store: RedisStore = {
    name: 'redis',
    maxOutcomeBytes: MAX_OUTCOME_BYTES,
    prefix,
    keysOf,
    inbox: redisInboxTable(send, prefix, holdMs, wait !== undefined),
    claim(scope, key, fingerprint, leaseMs, ttlMs) {
      const keys = keysOf(scope, key)
      const decode = (reply: Reply): LeaseClaim => toClaim(reply, send, keys)
      return send('claim', 'idemLeaseClaimV1', keys, [fingerprint, leaseMs, ttlMs, confirmCompleted], decode, (claim) => {
        // Nobody will run under this claim: hand it back rather than leave the key in
        // flight until the lease runs out.
        if (claim.state === 'acquired') claim.lease.release().catch(() => {})
      })
    },
    peek(scope, key) {
      return send('peek', 'idemLeasePeekV1', keysOf(scope, key), [], toPeek)
    },
  }
  return store
}

function toPeek(reply: Reply): PeekResult {
  const [state, fingerprint, outcome] = reply as [string, string?, string?]
  if (state === 'completed') return { state, record: { fingerprint: fingerprint!, outcome: outcome! } }
  if (state === 'held' || state === 'absent') return { state }
  throw new Error(`The peek script returned an unexpected reply: ${JSON.stringify(reply)}`)
}

/**
 * A standalone ioredis client's own `commandTimeout`, if set. A Cluster's is not one:
 * commands wait in the Cluster's own queue, without it, while it connects.
 */
function commandTimeoutOf(client: object): number | undefined {
  if ('isCluster' in client && client.isCluster === true) return undefined
  if (!('options' in client) || client.options === null || typeof client.options !== 'object') return undefined
  const { options } = client
  return 'commandTimeout' in options && typeof options.commandTimeout === 'number' ? options.commandTimeout : undefined
}

// Every failure of a Redis call (refused, reset, closed, timed out, READONLY after a
// failover, OOM) means the store cannot answer now: 503, and the request is retried.
// Except a command an inbox handler staged that Redis refuses as such (a key outside
// the message's slot, a wrong type, a bad command): retrying would never help.
function unavailable(error: unknown): unknown {
  if (error instanceof StoreUnavailableError) return error
  const message = error instanceof Error ? error.message : String(error)
  if (/^(CROSSSLOT|WRONGTYPE|ERR (unknown command|wrong number of arguments|syntax error|value is not))/.test(message)) return error
  return new StoreUnavailableError(`Redis is unavailable: ${message}`, { cause: error })
}
