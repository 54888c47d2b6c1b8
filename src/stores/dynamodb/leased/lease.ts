import type { Lease } from '../../../ports/leased-store.js'
import { N, S, ttlOf } from '../items.js'
import type { LeasedContext } from './context.js'
import { fenced, fencedUpdate } from './fence.js'
import { Head, readHead } from './head.js'
import { complete } from './outcome.js'
import { readSteps, saveStep } from './steps.js'

const RENEW = fencedUpdate('SET #leaseUntil = :leaseUntil, #ver = #ver + :one', {}, [':leaseUntil'])
const PUSH_EXPIRY = fencedUpdate('SET #expiresAt = :leaseUntil, #ttl = :ttl, #ver = #ver + :one', {}, [':leaseUntil', ':ttl'])
const RELEASE = fencedUpdate('SET #state = :free, #ver = #ver + :one REMOVE #leaseUntil', { ':free': S('free') }, [])

/**
 * One claim of a key: the claim item's partition, computed once per claim, and the
 * claim's token, which every write through it is fenced on (`fence.ts`).
 */
export class DynamoLease implements Lease {
  readonly #context: LeasedContext
  readonly #pk: string
  readonly #token: number

  constructor(context: LeasedContext, pk: string, token: number) {
    this.#context = context
    this.#pk = pk
    this.#token = token
  }

  renew(leaseMs: number): Promise<boolean> {
    return renew(this.#context, this.#pk, this.#token, leaseMs)
  }

  saveStep(name: string, result: string): Promise<boolean> {
    return saveStep(this.#context, this.#pk, this.#token, name, result)
  }

  complete(outcome: string, ttlMs: number): Promise<boolean> {
    return complete(this.#context, this.#pk, this.#token, outcome, ttlMs)
  }

  release(): Promise<boolean> {
    return release(this.#context, this.#pk, this.#token)
  }

  /** The token, while a consistent read finds the key held under it and not expired. */
  async fencingToken(): Promise<number | undefined> {
    const head = await readHead(this.#context, this.#pk, 'fencingToken')
    const holds = head !== undefined && head.state === 'held' && head.token === this.#token && head.expiresAt > this.#context.now()
    return holds ? this.#token : undefined
  }
}

/** Extends the holder's lease to `leaseMs` from now; false when the fence did not hold. */
async function renew(context: LeasedContext, pk: string, token: number, leaseMs: number): Promise<boolean> {
  const leaseUntil = context.now() + leaseMs
  const after = await fenced(context, 'renew', pk, token, RENEW, { ':leaseUntil': N(leaseUntil) }, 'ALL_NEW')
  if (after === false) return false
  const head = new Head(after)
  // Rare: a lease that outlives the key's retention pushes it (and its steps') further.
  if (head.expiresAt < leaseUntil) {
    const pushed = await fenced(context, 'renew', pk, token, PUSH_EXPIRY, { ':leaseUntil': N(leaseUntil), ':ttl': ttlOf(leaseUntil) })
    if (pushed === false) return false
    if (head.steps) await readSteps(context, pk, head.gen ?? 0, leaseUntil)
  }
  return true
}

/** Frees the key (its steps stay, for the next holder); false when the fence did not hold. */
export async function release(context: LeasedContext, pk: string, token: number): Promise<boolean> {
  return (await fenced(context, 'release', pk, token, RELEASE, {})) !== false
}
