import type { PeekResult } from '../../ports/key-peek.js'
import { NO_STEPS, type Lease, type LeaseClaim } from '../../ports/leased-store.js'
import type { ScriptCall } from './caller.js'
import type { V2ScriptName } from './scripts.js'

/** A key's claim and steps (`RedisKeys`). */
interface V2Keys {
  readonly claim: string
  readonly steps: string
}

/**
 * Claims a key whose claim is still protocol v2's hash (the v3 claim's `SET` answered
 * WRONGTYPE), by v2's claim script: its completed record is replayed, its live claim
 * respected, and a key it frees is claimed in v2's hash until the hash expires.
 * `confirm`: the store waits for replicas (see `CLAIM` in `v2-scripts.ts`).
 */
export function v2Claim(send: LeaseSend, keys: V2Keys, fingerprint: string, leaseMs: number, ttlMs: number, confirm: boolean): Promise<LeaseClaim> {
  return send('claim', 'idemLeaseClaimV1', [keys.claim, keys.steps], [fingerprint, leaseMs, ttlMs, confirm ? '1' : '0'], (reply) => toV2Claim(reply, send, keys), (claim) => {
    // Nobody will run under this claim: hand it back rather than leave the key in flight.
    if (claim.state === 'acquired') claim.lease.release().catch(() => {})
  })
}

/** What a v2 key holds, without claiming it (see `PEEK` in `v2-scripts.ts`). */
export function v2Peek(send: LeaseSend, keys: V2Keys): Promise<PeekResult> {
  return send('peek', 'idemLeasePeekV1', [keys.claim, keys.steps], [], (reply) => {
    const [state, fingerprint, outcome] = reply as [string, string?, string?]
    if (state === 'completed') return { state, record: { fingerprint: fingerprint!, outcome: outcome! } }
    if (state === 'held' || state === 'absent') return { state }
    throw new Error(`The v2 peek script returned an unexpected reply: ${JSON.stringify(reply)}`)
  })
}

/** How a v2 lease reaches Redis: the store's v2 scripts by name. */
export type LeaseSend = ScriptCall<V2ScriptName>

/**
 * One claim of a key still held in protocol v2's hash (docs/redis-protocol.md): the
 * key's names and the claim's token (as the text the scripts compare), which every
 * script after the claim is fenced on (`FENCE` in `v2-scripts.ts`).
 */
export class V2Lease implements Lease {
  readonly #send: LeaseSend
  readonly #keys: readonly string[]
  readonly #token: string

  constructor(send: LeaseSend, keys: V2Keys, token: string) {
    this.#send = send
    this.#keys = [keys.claim, keys.steps]
    this.#token = token
  }

  renew(leaseMs: number): Promise<boolean> {
    return this.#send('renew', 'idemLeaseRenewV1', this.#keys, [this.#token, leaseMs], toBoolean)
  }

  saveStep(name: string, result: string): Promise<boolean> {
    return this.#send('saveStep', 'idemLeaseSaveStepV1', this.#keys, [this.#token, name, result], toBoolean)
  }

  complete(outcome: string, ttlMs: number): Promise<boolean> {
    return this.#send('complete', 'idemLeaseCompleteV1', this.#keys, [this.#token, outcome, ttlMs], toBoolean)
  }

  release(): Promise<boolean> {
    return this.#send('release', 'idemLeaseReleaseV1', this.#keys, [this.#token], toBoolean)
  }

  async fencingToken(): Promise<number | undefined> {
    return (await this.#send('fencingToken', 'idemLeaseHoldsV1', this.#keys, [this.#token], toBoolean)) ? Number(this.#token) : undefined
  }
}

/** The v2 claim script's reply as a claim: an acquired one holds a `V2Lease` on `keys`. */
function toV2Claim(reply: unknown, send: LeaseSend, keys: V2Keys): LeaseClaim {
  const [state, ...rest] = reply as [string, ...unknown[]]
  switch (state) {
    case 'acquired': {
      const [token, flat] = rest as [string, string[]]
      const lease = new V2Lease(send, keys, token)
      if (flat.length === 0) return { state: 'acquired', lease, steps: NO_STEPS }
      const steps = new Map<string, string>()
      for (let i = 0; i < flat.length; i += 2) steps.set(flat[i]!, flat[i + 1]!)
      return { state: 'acquired', lease, steps }
    }
    case 'completed': {
      const [fingerprint, outcome] = rest as [string, string]
      return { state: 'completed', record: { fingerprint, outcome } }
    }
    case 'running':
      return { state: 'running', fingerprint: rest[0] as string }
    default:
      throw new Error(`The v2 claim script returned an unexpected reply: ${JSON.stringify(reply)}`)
  }
}

function toBoolean(reply: unknown): boolean {
  return reply === 1
}
