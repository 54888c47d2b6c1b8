import { randomUUID } from 'node:crypto'
import type { PeekResult } from '../../ports/key-peek.js'
import { NO_STEPS, type Lease, type LeaseClaim } from '../../ports/leased-store.js'
import { LOADED, type Caller, type ScriptCall } from './caller.js'
import type { ScriptName } from './scripts.js'
import { v2Claim, v2Peek } from './v2-lease.js'

/** The Redis keys of one `(scope, key)`. */
export interface RedisKeys {
  /** The claim: a string, `3h …`, `3s …` or `3c …` (see `scripts.ts`). */
  claim: string
  /** The steps hash: step name → result, while the claim is `3s`. */
  steps: string
  /** The last fencing token given and its claim, once a call asked for one. */
  fence: string
}

/**
 * Names the keys of `(scope, key)` under `prefix`. They carry the same Redis Cluster
 * hash tag, `{scope:key}`, so they live in one slot and one script may touch them all.
 * `%`, `{`, `}` and `:` inside scope and key are percent-encoded: a `}` would end the
 * tag early, and encoding `:` keeps ("a:b","c") and ("a","b:c") apart.
 *
 * @example redisKeys('idem:', 'acct_1', 'order-42') // { claim: 'idem:{acct_1:order-42}:claim', steps: 'idem:{acct_1:order-42}:steps', fence: 'idem:{acct_1:order-42}:fence' }
 */
export function redisKeys(prefix: string, scope: string, key: string): RedisKeys {
  const tag = prefix + '{' + encode(scope) + ':' + encode(key) + '}'
  return { claim: tag + ':claim', steps: tag + ':steps', fence: tag + ':fence' }
}

/** Percent-encodes `%`, `{`, `}` and `:`, so a text can sit inside a hash tag and between `:` separators. */
export function encode(text: string): string {
  // Most scopes and keys have none of the four, and a scan costs less than a replace.
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === 0x25 || c === 0x7b || c === 0x7d || c === 0x3a) return text.replace(/[%{}:]/g, (s) => `%${s.charCodeAt(0).toString(16).toUpperCase()}`)
  }
  return text
}

/** One claim as its lease writes through it: the keys, the claimId, the request, its 3h value. */
interface Claimed {
  readonly keys: RedisKeys
  readonly claimId: string
  readonly fingerprint: string
  /** `3h <claimId> <fingerprint>`: what the claim wrote, compared by every write while the lease has no steps. */
  readonly held: string
  /** How long a key with steps is kept: the claim's leaseMs + ttlMs. */
  readonly retainMs: number
}

/** What a claim's reply says: a claim, or steps of the caller's own request (a 3s value), which the takeover script decides on. */
type Found = LeaseClaim | { readonly state: 'stepped' }

/**
 * The Redis store's protocol v3 (docs/redis-protocol.md): a claim is one plain command,
 * `SET <claim> <3h value> NX PX <leaseMs> GET`, whose reply is nil (acquired) or the
 * key's value: 3c (completed), 3h (running), 3s (running, or its own request's steps,
 * which the takeover script takes over). A key whose claim is still v2's hash answers
 * WRONGTYPE, and is served by v2's scripts for as long as the hash lives.
 */
export class Protocol {
  readonly #caller: Caller
  readonly #scripts: ScriptCall
  readonly #prefix: string
  readonly #confirm: boolean

  /** `confirm`: the store waits for replicas, so a claim that replays writes the record again (`CLAIM_CONFIRMED`). */
  constructor(caller: Caller, scripts: ScriptCall, prefix: string, confirm: boolean) {
    this.#caller = caller
    this.#scripts = scripts
    this.#prefix = prefix
    this.#confirm = confirm
  }

  claim(scope: string, key: string, fingerprint: string, leaseMs: number, ttlMs: number): Promise<LeaseClaim> {
    const keys = redisKeys(this.#prefix, scope, key)
    const claimId = randomUUID()
    const claimed: Claimed = { keys, claimId, fingerprint, held: '3h ' + claimId + ' ' + fingerprint, retainMs: leaseMs + ttlMs }
    const decode = (reply: unknown): Found => (reply === null ? this.#acquired(claimed, false, NO_STEPS) : found(reply, fingerprint))
    const sent = this.#confirm
      ? this.#caller.script('claim', LOADED.idemClaimConfirmedV3, [keys.claim], [claimed.held, String(leaseMs)], true, decode, releaseUnused)
      : this.#caller.command('claim', ['set', keys.claim, claimed.held, 'NX', 'PX', String(leaseMs), 'GET'], keys.claim, true, decode, releaseUnused)
    return sent.then(
      (claim) => (claim.state === 'stepped' ? this.#takeover(claimed, leaseMs) : claim),
      (error: unknown) => {
        if (!isWrongType(error)) throw error
        return v2Claim(this.#scripts, keys, fingerprint, leaseMs, ttlMs, this.#confirm)
      },
    )
  }

  /** What a key holds, without claiming it (see `KeyPeek`): a 3h or 3s value is `held` (a live lease, or steps to resume). */
  peek(scope: string, key: string): Promise<PeekResult> {
    const keys = redisKeys(this.#prefix, scope, key)
    return this.#caller
      .command('peek', ['get', keys.claim], keys.claim, false, (reply): PeekResult => {
        if (reply === null) return { state: 'absent' }
        const claim = found(reply, '')
        return claim.state === 'completed' ? claim : { state: 'held' }
      })
      .catch((error: unknown) => {
        if (!isWrongType(error)) throw error
        return v2Peek(this.#scripts, keys)
      })
  }

  #acquired(claimed: Claimed, stepped: boolean, steps: ReadonlyMap<string, string>): LeaseClaim {
    return { state: 'acquired', lease: new RedisLease(this.#caller, this.#scripts, claimed, stepped), steps }
  }

  /** The second round trip of a claim that found its own request's steps: the takeover script decides on what it finds now. */
  #takeover(claimed: Claimed, leaseMs: number): Promise<LeaseClaim> {
    const { keys, claimId, fingerprint, retainMs } = claimed
    const decode = (reply: unknown): LeaseClaim => {
      if (!Array.isArray(reply)) {
        const claim = found(reply, fingerprint)
        // Its own request's steps still under a live lease: running.
        return claim.state === 'stepped' ? { state: 'running', fingerprint } : claim
      }
      if (reply[0] === 'h') return this.#acquired(claimed, false, NO_STEPS)
      const flat = reply[1] as string[]
      const steps = new Map<string, string>()
      for (let i = 0; i < flat.length; i += 2) steps.set(flat[i]!, flat[i + 1]!)
      return this.#acquired(claimed, true, steps)
    }
    return this.#scripts('claim', 'idemTakeoverV3', [keys.claim, keys.steps], [claimId, fingerprint, leaseMs, retainMs], decode, releaseUnused)
  }
}

/** A claim's reply that is the key's value: completed, running, or 3s steps (`stepped` when they are `fingerprint`'s). */
function found(value: unknown, fingerprint: string): Found {
  if (typeof value !== 'string') throw new Error(`Redis answered a claim with ${JSON.stringify(value)}`)
  const kind = value.slice(0, 3)
  if (kind === '3c ') {
    const space = value.indexOf(' ', 3)
    const end = space + 1 + Number(value.slice(3, space))
    return { state: 'completed', record: { fingerprint: value.slice(space + 1, end), outcome: value.slice(end) } }
  }
  if (kind === '3h ') return { state: 'running', fingerprint: value.slice(40) }
  if (kind === '3s ') {
    const held = value.slice(value.indexOf(' ', 40) + 1)
    return held === fingerprint ? { state: 'stepped' } : { state: 'running', fingerprint: held }
  }
  throw new Error(`The key holds a value of no idem protocol: ${JSON.stringify(value.slice(0, 40))}`)
}

/** A claim that acquired after its caller gave up: nobody will run under it, so it is handed back rather than left in flight until its lease ends. */
function releaseUnused(claim: Found): void {
  if (claim.state === 'acquired') claim.lease.release().catch(() => {})
}

function isWrongType(error: unknown): boolean {
  return error instanceof Error && error.message.includes('WRONGTYPE')
}

/**
 * One claim's lease in protocol v3. While the lease has no steps every write is
 * compare-and-set on its exact 3h value: `SET … IFEQ` where the server has it, the
 * `SWAP` script otherwise. Once it has steps (its first step, or a takeover of steps),
 * scripts fenced on its claimId. A write in the 3h form that the key refuses is sent
 * again by claimId: the lease's own first step may have turned the value into 3s (a
 * heartbeat's renewal beside it), and the scripts take either form of the claim.
 */
class RedisLease implements Lease {
  readonly #caller: Caller
  readonly #scripts: ScriptCall
  readonly #claimed: Claimed
  #stepped: boolean
  // The fencing token, once a call asked for it: the same on every later read.
  #token = ''

  constructor(caller: Caller, scripts: ScriptCall, claimed: Claimed, stepped: boolean) {
    this.#caller = caller
    this.#scripts = scripts
    this.#claimed = claimed
    this.#stepped = stepped
  }

  renew(leaseMs: number): Promise<boolean> {
    if (this.#stepped) return this.#byId('renew', 'idemRenewV3', [leaseMs])
    return this.#swap('renew', this.#claimed.held, leaseMs).then((done) => done || this.#byId('renew', 'idemRenewV3', [leaseMs]))
  }

  async saveStep(name: string, result: string): Promise<boolean> {
    const saved = await this.#byId('saveStep', 'idemSaveStepV3', [name, result, this.#claimed.retainMs])
    if (saved) this.#stepped = true
    return saved
  }

  complete(outcome: string, ttlMs: number): Promise<boolean> {
    const { fingerprint } = this.#claimed
    const value = '3c ' + fingerprint.length + ' ' + fingerprint + outcome
    if (this.#stepped) return this.#byId('complete', 'idemCompleteV3', [value, ttlMs])
    return this.#swap('complete', value, ttlMs).then((done) => done || this.#byId('complete', 'idemCompleteV3', [value, ttlMs]))
  }

  release(): Promise<boolean> {
    return this.#byId('release', 'idemReleaseV3', [])
  }

  async fencingToken(): Promise<number | undefined> {
    const { keys, claimId, retainMs } = this.#claimed
    const reply = await this.#scripts('fencingToken', 'idemFencingTokenV3', [keys.claim, keys.fence], [claimId, this.#token, retainMs], (r) => (r === 0 ? '' : String(r)))
    if (reply === '') return undefined
    this.#token = reply
    return Number(reply)
  }

  /** The key's 3h value, if it still is this claim's, replaced by `value` with PX `ms`. */
  #swap(operation: string, value: string, ms: number): Promise<boolean> {
    const { keys, held } = this.#claimed
    if (this.#caller.setIfEq) return this.#caller.command(operation, ['set', keys.claim, value, 'IFEQ', held, 'PX', String(ms)], keys.claim, true, isOk)
    return this.#caller.script(operation, LOADED.idemSwapV3, [keys.claim], [held, value, String(ms)], true, isOk)
  }

  /** One of the scripts fenced on the claimId, which take the 3h and the 3s value alike. */
  #byId(operation: string, script: ScriptName, args: Array<string | number>): Promise<boolean> {
    const { keys, claimId } = this.#claimed
    return this.#scripts(operation, script, [keys.claim, keys.steps], [claimId, ...args], isOne)
  }
}

function isOk(reply: unknown): boolean {
  return reply === 'OK'
}

function isOne(reply: unknown): boolean {
  return reply === 1
}
