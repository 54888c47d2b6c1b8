import { N, S, leasePk, ttlOf } from '../items.js'
import type { LeasedContext } from './context.js'
import { fenced, fencedUpdate } from './fence.js'
import { Head } from './head.js'
import { readSteps } from './steps.js'

const RENEW = fencedUpdate('SET #leaseUntil = :leaseUntil, #ver = #ver + :one', {}, [':leaseUntil'])
const PUSH_EXPIRY = fencedUpdate('SET #expiresAt = :leaseUntil, #ttl = :ttl, #ver = #ver + :one', {}, [':leaseUntil', ':ttl'])
const RELEASE = fencedUpdate('SET #state = :free, #ver = #ver + :one REMOVE #leaseUntil', { ':free': S('free') }, [])

/** Extends the holder's lease to `leaseMs` from now; false when the fence did not hold. */
export async function renew(context: LeasedContext, scope: string, key: string, token: number, leaseMs: number): Promise<boolean> {
  const pk = leasePk(scope, key)
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
export async function release(context: LeasedContext, scope: string, key: string, token: number): Promise<boolean> {
  return (await fenced(context, 'release', leasePk(scope, key), token, RELEASE, {})) !== false
}
