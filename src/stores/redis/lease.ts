import { NO_STEPS, type Lease, type LeaseClaim } from '../../core/leased/store.js'
import type { RedisKeys } from './keys.js'
import type { ScriptName } from './scripts.js'

/** How a lease reaches Redis: the store's `send` over one of its scripts, with the key's two keys. */
export type LeaseSend = <T>(
  operation: string,
  script: ScriptName,
  keys: RedisKeys,
  args: Array<string | number>,
  decode: (reply: unknown) => T,
  abandoned?: (value: T) => void,
) => Promise<T>

/**
 * One claim of a key on Redis: the key's names, computed once per claim, and the claim's
 * token (as the text the scripts compare), which every script after the claim is
 * fenced on (`FENCE` in `scripts.ts`).
 */
export class RedisLease implements Lease {
  readonly #send: LeaseSend
  readonly #keys: RedisKeys
  readonly #token: string

  constructor(send: LeaseSend, keys: RedisKeys, token: string) {
    this.#send = send
    this.#keys = keys
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

/** The claim script's reply as a claim: an acquired one holds a `RedisLease` on `keys`. */
export function toClaim(reply: unknown, send: LeaseSend, keys: RedisKeys): LeaseClaim {
  const [state, ...rest] = reply as [string, ...unknown[]]
  switch (state) {
    case 'acquired': {
      const [token, flat] = rest as [string, string[]]
      const lease = new RedisLease(send, keys, token)
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
      throw new Error(`The claim script returned an unexpected reply: ${JSON.stringify(reply)}`)
  }
}

function toBoolean(reply: unknown): boolean {
  return reply === 1
}
