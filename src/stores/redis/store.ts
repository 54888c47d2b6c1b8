import { IdemError } from '../../core/errors/idem-error.js'
import { InvalidOptionError } from '../../core/errors/invalid-option.js'
import { StoreUnavailableError } from '../../core/errors/store-unavailable.js'
import { assertDuration, assertKnownOptions, optionNames } from '../../core/validate.js'
import type { PeekResult } from '../../core/dual-read.js'
import type { LeaseClaim } from '../../core/leased/store.js'
import { redisAdapter, script, type RedisAdapter, type Script } from './adapter.js'
import { CommandDeadlines } from './deadlines.js'
import { INBOX_SCRIPTS, type InboxScriptName } from './inbox-scripts.js'
import { redisInboxTable } from './inbox-table.js'
import { redisKeys, type RedisKeys } from './keys.js'
import { toClaim } from './lease.js'
import { DEFAULT_REDIS_HOLD_MS, DEFAULT_REDIS_PREFIX, DEFAULT_REDIS_TIMEOUT_MS, type RedisStore, type RedisStoreOptions } from './options.js'
import { replicaWait, type ReplicaWait } from './replicas.js'
import { SCRIPTS, type ScriptName } from './scripts.js'
import { MAX_OUTCOME_BYTES } from '../max-outcome.js'

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

/** Every script the store runs, by name. */
type StoreScriptName = ScriptName | InboxScriptName

/**
 * Runs one of the store's scripts: `keys` (a key's claim and steps, or an inbox's keys),
 * `args`, and what to make of the reply. `abandoned` gets a reply the caller will not
 * act on (see `scriptCaller`).
 */
type ScriptCall = <T>(
  operation: string,
  script: StoreScriptName,
  keys: RedisKeys | string[],
  args: Array<string | number>,
  decode: (reply: unknown) => T,
  abandoned?: (value: T) => void,
) => Promise<T>

const LOADED: Readonly<Record<StoreScriptName, Script>> = Object.fromEntries(
  Object.entries({ ...SCRIPTS, ...INBOX_SCRIPTS }).map(([name, lua]) => [name, script(lua)]),
) as Record<StoreScriptName, Script>

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
const WAITED: ReadonlySet<StoreScriptName> = new Set([
  'idemLeaseClaimV1',
  'idemLeaseRenewV1',
  'idemLeaseSaveStepV1',
  'idemLeaseCompleteV1',
  'idemInboxBeginV1',
  'idemInboxCommitV1',
  'idemInboxFailureV1',
])

/**
 * How the store runs its scripts: each with a deadline of `timeoutMs` (unless the
 * client's own command timeout is no longer), after the client's one server check, and
 * (for the writes in WAITED, with `waitForReplicas`) followed by its WAIT. A reply the
 * caller will not act on is handed to `abandoned`: it came after the deadline (the
 * caller was told the store is unavailable, but the script ran), or too few replicas
 * acknowledged it. Under ioredis's own `commandTimeout` a late reply is dropped, and a
 * claim that landed late is left to its lease.
 */
function scriptCaller(adapter: RedisAdapter, timeoutMs: number, wait: ReplicaWait | undefined): ScriptCall {
  // The client's own command timeout, when it is no longer than ours, already fails a
  // command (queued while connecting included) in time: then the store keeps no clock.
  const clientTimeoutMs = adapter.commandTimeoutMs
  const deadlines = clientTimeoutMs !== undefined && clientTimeoutMs <= timeoutMs ? undefined : new CommandDeadlines(timeoutMs)
  const required = wait?.count ?? 0
  const dispatch = dispatcher(adapter, wait)
  const call: ScriptCall = (operation, name, keys, args, decode, abandoned) =>
    new Promise((resolve, reject) => {
      const deadline = deadlines?.watch(() => reject(new StoreUnavailableError(`Redis did not answer ${operation} within ${timeoutMs} ms (timeoutMs)`)))
      // False once the deadline passed: the caller has been answered.
      const inTime = (): boolean => deadlines === undefined || deadline === undefined || deadlines.settle(deadline)
      const answer = (raw: unknown, acks: number): void => {
        // Late: the caller was told the store is unavailable, but the script ran.
        const late = !inTime()
        let value: ReturnType<typeof decode>
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
              `Redis replicas did not acknowledge ${operation}: ${acks} of ${required} within ${wait!.timeoutMs} ms (waitForReplicas); a failover may lose it`,
            ),
          )
        } else {
          resolve(value)
        }
      }
      const fail = (error: unknown): void => {
        if (inTime()) reject(unavailable(error))
      }
      const all = Array.isArray(keys) ? keys : [keys.claim, keys.steps]
      const strings = args.map(String)
      if (adapter.traits !== undefined) dispatch(name, all, strings, answer, fail)
      else adapter.serverTraits().then(() => dispatch(name, all, strings, answer, fail), fail)
    })
  return call
}

type Dispatch = (name: StoreScriptName, keys: string[], args: string[], answer: (raw: unknown, acks: number) => void, fail: (error: unknown) => void) => void

/** Sends one script (with its WAIT, for the writes in WAITED); its reply and acknowledgements go to `answer`, any failure to `fail`. */
function dispatcher(adapter: RedisAdapter, wait: ReplicaWait | undefined): Dispatch {
  return (name, keys, args, answer, fail) => {
    try {
      if (wait !== undefined && WAITED.has(name)) {
        adapter.waited({ script: LOADED[name], keys, args }, wait.count, wait.timeoutMs).then(([raw, acks]) => answer(raw, acks), fail)
      } else {
        adapter.run(LOADED[name], keys, args).then((raw) => answer(raw, wait?.count ?? 0), fail)
      }
    } catch (error) {
      fail(error)
    }
  }
}

// Every failure of a Redis call (refused, reset, closed, timed out, READONLY after a
// failover, OOM) means the store cannot answer now: 503, and the request is retried.
// Except a command an inbox handler staged that Redis refuses as such (a key outside
// the message's slot, a wrong type, a bad command): retrying would never help; and
// idem's own errors (a server too old for idem).
function unavailable(error: unknown): unknown {
  if (error instanceof IdemError) return error
  const message = error instanceof Error ? error.message : String(error)
  if (/^(CROSSSLOT|WRONGTYPE|ERR (unknown command|wrong number of arguments|syntax error|value is not))/.test(message)) return error
  return new StoreUnavailableError(`Redis is unavailable: ${message}`, { cause: error })
}
