import { IdemError } from '../../core/errors/idem-error.js'
import { StoreUnavailableError } from '../../core/errors/store-unavailable.js'
import type { RedisAdapter, Script, Write } from './adapter.js'
import type { ReplicaWait } from './replicas.js'
import type { RawSend } from './transport.js'
import { script } from './adapter.js'
import { INBOX_SCRIPTS, type InboxScriptName } from './inbox-scripts.js'
import { SCRIPTS, V2_SCRIPTS, type ScriptName, type V2ScriptName } from './scripts.js'

/** Every script the store runs, by name. */
export type StoreScriptName = ScriptName | V2ScriptName | InboxScriptName

/** Every script the store runs, with its SHA1. */
export const LOADED: Readonly<Record<StoreScriptName, Script>> = Object.fromEntries(
  Object.entries({ ...SCRIPTS, ...V2_SCRIPTS, ...INBOX_SCRIPTS }).map(([name, lua]) => [name, script(lua)]),
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
 * key held until its lease runs out), a fencing token (a lost fence only lets a later
 * claim's token be the server's clock), and an inbox hold's renewals (losing one lets a
 * second delivery start, and the commit is fenced).
 */
export const WAITED: ReadonlySet<StoreScriptName> = new Set<StoreScriptName>([
  'idemSwapV3',
  'idemRenewV3',
  'idemSaveStepV3',
  'idemCompleteV3',
  'idemTakeoverV3',
  'idemClaimConfirmedV3',
  'idemLeaseClaimV1',
  'idemLeaseRenewV1',
  'idemLeaseSaveStepV1',
  'idemLeaseCompleteV1',
  'idemInboxBeginV1',
  'idemInboxCommitV1',
  'idemInboxFailureV1',
])

/**
 * Runs one of the store's scripts by name: `keys`, `args`, and what to make of the
 * reply; `abandoned` gets a reply the caller will not act on (see `Caller`).
 */
export type ScriptCall<Name extends StoreScriptName = StoreScriptName> = <T>(
  operation: string,
  script: Name,
  keys: readonly string[],
  args: ReadonlyArray<string | number>,
  decode: (reply: unknown) => T,
  abandoned?: (value: T) => void,
) => Promise<T>

/** `caller`'s scripts by name, waited for as WAITED says. */
export function scriptCall(caller: Caller): ScriptCall {
  return (operation, name, keys, args, decode, abandoned) => caller.script(operation, LOADED[name], keys, args.map(String), WAITED.has(name), decode, abandoned)
}

/**
 * How the store sends its commands and scripts: each with a deadline of `timeoutMs`
 * (unless the client's own command timeout is no longer), after the client's one server
 * check, and (for a write a later call relies on, with `waitForReplicas`) followed by its
 * WAIT. A reply the caller will not act on is handed to `abandoned`: it came after the
 * deadline (the caller was told the store is unavailable, but the write ran), or too few
 * replicas acknowledged it. Under ioredis's own `commandTimeout` a late reply is dropped,
 * and a claim that landed late is left to its lease.
 *
 * A command goes straight to the client's own send method (`Transport.raw`): a fresh
 * call's claim and completion cross no code of idem's but this file's and the store's.
 */
export class Caller {
  /** Whether the server has `SET … IFEQ`; known once the first command was sent (`ServerTraits.setIfEq`). */
  setIfEq = false
  readonly #adapter: RedisAdapter
  readonly #timeoutMs: number
  readonly #wait: ReplicaWait | undefined
  readonly #deadlines: CommandDeadlines | undefined
  readonly #raw: (command: string[], key: string) => Promise<unknown>
  #checked = false

  constructor(adapter: RedisAdapter, timeoutMs: number, wait: ReplicaWait | undefined) {
    this.#adapter = adapter
    this.#timeoutMs = timeoutMs
    this.#wait = wait
    // The client's own command timeout, when it is no longer than ours, already fails a
    // command (queued while connecting included) in time: then the store keeps no clock.
    const clientTimeoutMs = adapter.commandTimeoutMs
    this.#deadlines = clientTimeoutMs !== undefined && clientTimeoutMs <= timeoutMs ? undefined : new CommandDeadlines(timeoutMs)
    this.#raw = direct(adapter.raw)
  }

  /** Sends one command (`key` routes it on a Cluster); `waited`: a write a later call relies on (see `waitForReplicas`). */
  command<T>(operation: string, command: string[], key: string, waited: boolean, decode: (reply: unknown) => T, abandoned?: (value: T) => void): Promise<T> {
    return this.#call(operation, { command, key }, waited, decode, abandoned)
  }

  /** Runs a script by its SHA1 (sent whole when the server lost it); `waited` as for `command`. */
  script<T>(
    operation: string,
    script: Script,
    keys: readonly string[],
    args: readonly string[],
    waited: boolean,
    decode: (reply: unknown) => T,
    abandoned?: (value: T) => void,
  ): Promise<T> {
    return this.#call(operation, { script, keys, args }, waited, decode, abandoned)
  }

  #call<T>(operation: string, write: Write, waited: boolean, decode: (reply: unknown) => T, abandoned: ((value: T) => void) | undefined): Promise<T> {
    return new Promise((resolve, reject) => {
      const deadlines = this.#deadlines
      const deadline = deadlines?.watch(() => reject(new StoreUnavailableError(`Redis did not answer ${operation} within ${this.#timeoutMs} ms (timeoutMs)`)))
      const required = waited ? (this.#wait?.count ?? 0) : 0
      const answer = (raw: unknown, acks: number): void => {
        // Late: the caller was told the store is unavailable, but the write ran.
        const late = deadline !== undefined && !deadlines!.settle(deadline)
        let value: T
        try {
          value = decode(raw)
        } catch (error) {
          if (!late) reject(unavailable(error))
          return
        }
        if (late) return abandoned?.(value)
        if (acks >= required) return resolve(value)
        abandoned?.(value)
        reject(
          new StoreUnavailableError(
            `Redis replicas did not acknowledge ${operation}: ${acks} of ${required} within ${this.#wait!.timeoutMs} ms (waitForReplicas); a failover may lose it`,
          ),
        )
      }
      const fail = (error: unknown): void => {
        if (deadline === undefined || deadlines!.settle(deadline)) reject(unavailable(error))
      }
      const send = (): void => {
        try {
          if (required > 0) this.#adapter.waited(write, required, this.#wait!.timeoutMs).then(([raw, acks]) => answer(raw, acks), fail)
          else this.#send(write).then((raw) => answer(raw, 0), fail)
        } catch (error) {
          fail(error)
        }
      }
      if (this.#checked) send()
      else this.#check().then(send, fail)
    })
  }

  /** The client's one server check, before its first command: the server's version and `SET … IFEQ`. */
  async #check(): Promise<void> {
    const traits = await this.#adapter.serverTraits()
    this.setIfEq = traits.setIfEq
    this.#checked = true
  }

  async #send(write: Write): Promise<unknown> {
    if ('command' in write) return await this.#raw(write.command as string[], write.key)
    const { script, keys, args } = write
    try {
      return await this.#raw(['evalsha', script.sha, String(keys.length), ...keys, ...args], keys[0]!)
    } catch (error) {
      if (!(error instanceof Error && error.message.startsWith('NOSCRIPT'))) throw error
      return await this.#raw(['eval', script.lua, String(keys.length), ...keys, ...args], keys[0]!)
    }
  }
}

/** A command sent by the client's own method, as it takes one. Command names are lower case (see `ioredis.ts`). */
function direct(raw: RawSend): (command: string[], key: string) => Promise<unknown> {
  switch (raw.kind) {
    case 'call':
      return (command) => raw.call(command[0]!, ...command.slice(1))
    case 'args':
      return (command) => raw.sendCommand(command)
    case 'cluster':
      return (command, key) => raw.sendCommand(key, false, command)
  }
}

// Every failure of a Redis call (refused, reset, closed, timed out, READONLY after a
// failover, OOM) means the store cannot answer now: 503, and the request is retried.
// Except a command an inbox handler staged that Redis refuses as such (a key outside
// the message's slot, a wrong type, a bad command): retrying would never help; and
// idem's own errors (a server too old for idem). A WRONGTYPE on a claim is a key of
// protocol v2, which the store reads with v2's scripts.
function unavailable(error: unknown): unknown {
  if (error instanceof IdemError) return error
  const message = error instanceof Error ? error.message : String(error)
  if (/^(CROSSSLOT|WRONGTYPE|ERR (unknown command|wrong number of arguments|syntax error|value is not))/.test(message)) return error
  return new StoreUnavailableError(`Redis is unavailable: ${message}`, { cause: error })
}

/** One command being watched: when it expires, what to do then, and its neighbours in the queue. */
export interface Watched {
  readonly at: number
  readonly expire: () => void
  settled: boolean
  previous: Watched | undefined
  next: Watched | undefined
}

/**
 * The deadlines of a store's commands in flight, kept by one timer for the whole store
 * rather than one per command. Every command gets the same `timeoutMs`, so commands
 * expire in the order they were sent, and the timer only ever waits for the oldest one
 * still running: under a steady load it is armed about once per `timeoutMs`, however
 * many commands go by. A settled command leaves the queue at once (nothing of it stays
 * for the garbage collector to carry), and the timer keeps the process alive only while
 * a command runs, as a timer per command did.
 */
export class CommandDeadlines {
  readonly #timeoutMs: number
  // Oldest first.
  #first: Watched | undefined
  #last: Watched | undefined
  #timer: NodeJS.Timeout | undefined

  constructor(timeoutMs: number) {
    this.#timeoutMs = timeoutMs
  }

  /** Watches a command sent now: `expire` runs if it has not settled `timeoutMs` from now. */
  watch(expire: () => void): Watched {
    const watched: Watched = { at: performance.now() + this.#timeoutMs, expire, settled: false, previous: this.#last, next: undefined }
    if (this.#last === undefined) {
      this.#first = watched
      if (this.#timer === undefined) this.#arm(this.#timeoutMs)
      else this.#timer.ref()
    } else {
      this.#last.next = watched
    }
    this.#last = watched
    return watched
  }

  /**
   * Marks a command settled, before its deadline or after it.
   * @returns false when its deadline had passed already (`expire` ran)
   */
  settle(watched: Watched): boolean {
    if (watched.settled) return false
    watched.settled = true
    this.#remove(watched)
    if (this.#first === undefined) this.#timer?.unref()
    return true
  }

  #remove(watched: Watched): void {
    const { previous, next } = watched
    if (previous === undefined) this.#first = next
    else previous.next = next
    if (next === undefined) this.#last = previous
    else next.previous = previous
    watched.previous = undefined
    watched.next = undefined
  }

  #arm(ms: number): void {
    this.#timer = setTimeout(() => this.#tick(), ms)
  }

  #tick(): void {
    this.#timer = undefined
    const now = performance.now()
    for (let watched = this.#first; watched !== undefined && watched.at <= now; watched = this.#first) {
      watched.settled = true
      this.#remove(watched)
      watched.expire()
    }
    if (this.#first !== undefined) this.#arm(this.#first.at - now)
  }
}
