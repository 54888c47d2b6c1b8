import { IdemError } from '../../core/errors/idem-error.js'
import { StoreUnavailableError } from '../../core/errors/store-unavailable.js'
import { script, type RedisAdapter, type Script } from './adapter.js'
import { CommandDeadlines } from './deadlines.js'
import { INBOX_SCRIPTS, type InboxScriptName } from './inbox-scripts.js'
import type { RedisKeys } from './keys.js'
import type { ReplicaWait } from './replicas.js'
import { SCRIPTS, type ScriptName } from './scripts.js'

/** Every script the store runs, by name. */
export type StoreScriptName = ScriptName | InboxScriptName

/**
 * Runs one of the store's scripts: `keys` (a key's claim and steps, or an inbox's keys),
 * `args`, and what to make of the reply. `abandoned` gets a reply the caller will not
 * act on (see `scriptCaller`).
 */
export type ScriptCall = <T>(
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
export function scriptCaller(adapter: RedisAdapter, timeoutMs: number, wait: ReplicaWait | undefined): ScriptCall {
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
