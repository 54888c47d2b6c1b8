import type { InboxSession, InboxTable, PriorFailures } from '../../ports/inbox-table.js'
import { MAX_DURATION_MS } from '../../core/errors/option-checks.js'
import { LeaseLostError } from '../../core/errors/lease-lost.js'
import { randomUUID } from 'node:crypto'
import type { ScriptCall } from './caller.js'
import type { InboxScriptName } from './inbox-scripts.js'
import { redisInboxKey, redisInboxKeys } from './keys.js'
import { settledInboxSession } from '../settled-inbox-session.js'

/**
 * The Redis store's transaction, as an inbox handler sees it: commands staged with
 * `call` and run at commit by one script, atomically with the message id's record (and
 * the failure count's removal, a dead letter). What it can and cannot do:
 * - the commands' keys must be in the message's slot: name them with `tx.key(name)`
 *   (`<name>{<message key>}`). On Redis Cluster any other key fails the whole commit
 *   (CROSSSLOT) and nothing runs; on one server any key works;
 * - nothing staged is visible (to the handler or anyone) before the commit, and the
 *   handler's reads are not part of the transaction;
 * - Redis has no rollback: a command that fails as it runs (a wrong type) stops the
 *   script with the commands before it applied and the id not recorded, so stage
 *   commands that cannot fail on your keys (SET, HSET, INCRBY, SADD, XADD…);
 * - nothing outside Redis (an HTTP call, another database) is covered.
 *
 * @example
 * await inbox.consume(message, async (tx, message, key) => {
 *   tx.call('HSET', tx.key('orders:'), message.body.orderId, JSON.stringify(message.body))
 * })
 */
export interface RedisTx {
  /** A key of your own in the message's slot: `<name>{<message key>}` (`name` without braces). */
  key(name: string): string
  /** Stages one command on `key` (in the message's slot), run at commit. */
  call(command: string, key: string, ...args: Array<string | number>): void
}

/** How the table reaches Redis: the store's scripts by name, with their keys. */
export type InboxSend = ScriptCall<InboxScriptName>

// A failure count lives from a message's first failure to its success or dead letter;
// one never finished is collected after the longest retention there can be.
const ATTEMPTS_HORIZON_MS = 2 * MAX_DURATION_MS

/**
 * The inbox's table on Redis: per `(consumer, key)` an id hash (`held` with a token,
 * expiring `holdMs` after its last renewal, or `processed` until its retention ends),
 * a failure count and a dead letter, all in the message's slot (see `redisInboxKeys`).
 */
export function redisInboxTable(send: InboxSend, prefix: string, holdMs: number, waitsForReplicas: boolean): InboxTable<RedisTx> {
  const confirm = waitsForReplicas ? '1' : '0'
  return {
    async begin({ consumer, key, waitMs, retentionMs }) {
      const keys = redisInboxKeys(prefix, consumer, key)
      const deadline = Date.now() + Math.max(0, waitMs)
      let delay = 10
      for (;;) {
        const token = randomUUID()
        const state = await send('begin', 'idemInboxBeginV1', [keys.id], [token, holdMs, confirm], String, (abandoned) => {
          // The caller gave up on this claim: hand it back rather than hold it for holdMs.
          if (abandoned === 'new') send('rollback', 'idemInboxReleaseV1', [keys.id], [token], String).catch(() => {})
        })
        if (state === 'new') return heldDelivery(send, { consumer, key, keys, token, holdMs, retentionMs })
        if (state === 'processed') return settledInboxSession('processed', new Staged(key))
        const left = deadline - Date.now()
        if (left <= 0) return settledInboxSession('in-flight', new Staged(key))
        await new Promise((resolve) => setTimeout(resolve, Math.min(delay, left) * (0.5 + Math.random() / 2)))
        delay = Math.min(delay * 2, 250)
      }
    },

    recordFailure(consumer, key, error) {
      return send('recordFailure', 'idemInboxFailureV1', [redisInboxKeys(prefix, consumer, key).attempts], [error, ATTEMPTS_HORIZON_MS], Number)
    },
  }
}

/** A delivery's claim on its id: whose, under which keys, held how long, kept how long once processed. */
interface Claimed {
  readonly consumer: string
  readonly key: string
  readonly keys: ReturnType<typeof redisInboxKeys>
  readonly token: string
  readonly holdMs: number
  readonly retentionMs: number
}

/** The session of a delivery that holds its id: renewed every third of `holdMs` until it commits (one script: the id, the failure count, a dead letter and the handler's staged writes) or rolls back. */
function heldDelivery(send: InboxSend, { consumer, key, keys, token, holdMs, retentionMs }: Claimed): InboxSession<RedisTx> {
  const tx = new Staged(key)
  let done = false
  let takeFailures = false
  let deadLetter = ''
  const beat = setInterval(() => {
    send('renew', 'idemInboxRenewV1', [keys.id], [token, holdMs], String).catch(() => {})
  }, Math.max(1, Math.floor(holdMs / 3)))
  beat.unref()
  const end = () => {
    done = true
    clearInterval(beat)
  }
  const release = () => send('rollback', 'idemInboxReleaseV1', [keys.id], [token], String).then(() => {}, () => {})
  const rollback = async (): Promise<void> => {
    if (done) return
    end()
    await release()
  }
  return {
    state: 'new',
    tx,
    async takeFailures(): Promise<PriorFailures | undefined> {
      const [attempts, lastError, firstFailedAt] = await send('takeFailures', 'idemInboxFailureReadV1', [keys.attempts], [], (reply) => reply as Array<string | null>)
      if (attempts === null || attempts === undefined) return undefined
      takeFailures = true
      return { attempts: Number(attempts), lastError: lastError ?? '', firstFailedAt: new Date(Number(firstFailedAt ?? 0)) }
    },
    async deadLetter(letter) {
      deadLetter = JSON.stringify({ ...letter, firstSeenAt: letter.firstSeenAt?.toISOString() ?? null, deadAt: new Date().toISOString(), consumer, key })
    },
    async commit() {
      if (done) throw new RangeError('idem/redis: this delivery has ended')
      end()
      const { keys: staged, args } = tx.encoded(3)
      let committed: boolean
      try {
        committed = await send('commit', 'idemInboxCommitV1', [keys.id, keys.attempts, keys.dead, ...staged], [token, retentionMs, takeFailures ? '1' : '0', deadLetter, ...args], (r) => r === 1)
      } catch (error) {
        await release()
        throw error
      }
      if (!committed) {
        throw new LeaseLostError("idem/redis: the delivery's claim lapsed (held longer than holdMs without a renewal) and another took it; nothing was written")
      }
    },
    rollback,
    // Safe while the handler still runs: what it stages later is never sent.
    abandon: rollback,
  }
}

class Staged implements RedisTx {
  readonly #messageKey: string
  readonly #commands: Array<{ command: string; key: string; args: Array<string | number> }> = []
  constructor(messageKey: string) {
    this.#messageKey = messageKey
  }

  key(name: string): string {
    return redisInboxKey(name, this.#messageKey)
  }

  call(command: string, key: string, ...args: Array<string | number>): void {
    if (typeof command !== 'string' || !/^[A-Za-z][A-Za-z.|_-]*$/.test(command)) throw new TypeError(`idem/redis: not a Redis command: ${JSON.stringify(command)}`)
    if (typeof key !== 'string') throw new TypeError('idem/redis: a staged command needs its key')
    this.#commands.push({ command, key, args })
  }

  /** The staged commands as the commit script reads them; their keys follow the `offset` keys of idem's own. */
  encoded(offset: number): { keys: string[]; args: Array<string | number> } {
    const keys: string[] = []
    const index = new Map<string, number>()
    const args: Array<string | number> = [this.#commands.length]
    for (const { command, key, args: rest } of this.#commands) {
      let at = index.get(key)
      if (at === undefined) {
        keys.push(key)
        at = offset + keys.length
        index.set(key, at)
      }
      args.push(command, at, rest.length, ...rest)
    }
    return { keys, args }
  }
}
