import type { KeyPeek } from '../../../ports/key-peek.js'
import type { LeasedStore } from '../../../ports/leased-store.js'
import { MAX_OUTCOME_BYTES } from '../items.js'
import type { Wire } from '../wire.js'
import { claim } from './claim.js'
import type { LeasedContext } from './context.js'
import { peek } from './peek.js'

/**
 * The leased store's half of the DynamoDB store. Per key, under `pk = lease#<hash>`:
 * the claim item (`sk = '#'`: state, fingerprint, token, the lifetime's first token
 * `gen`, a version `ver` every write bumps, lease and expiry in ms, whether steps were
 * saved, the outcome), outcome parts (`#outcome#<i>`) for outcomes past one item, and
 * the steps (`step#<hash of name>`, parts `…#<i>`). A claim is a conditional put: on a
 * new key `attribute_not_exists`, otherwise on the version it read, so two claims of
 * one key never both succeed, and hands back a `DynamoLease` (`lease.ts`) every later
 * write of the call goes through. Steps are written in a transaction with a fenced
 * update of the claim item, so a replaced holder's step is refused with it.
 *
 * Time is the caller's clock (DynamoDB has none in its expressions): leases are as
 * accurate as the clocks of the processes sharing a table; fencing does not depend on
 * them.
 *
 * One module per part: the claim item and its reading (`head.ts`), the other items
 * under the key (`partition.ts`), the claim (`claim.ts`), the fence every later write
 * is made under (`fence.ts`), steps (`steps.ts`), the outcome (`outcome.ts`), the
 * lease a claim hands back, with renewal and release (`lease.ts`), and `peek.ts`; what
 * they share is made here, once.
 */
export function dynamoLeasedStore(wire: Wire, now: () => number = Date.now): LeasedStore & KeyPeek {
  const context: LeasedContext = { wire, TableName: wire.table, now }
  return {
    name: 'dynamodb',
    maxOutcomeBytes: MAX_OUTCOME_BYTES,
    peek: (scope, key) => peek(context, scope, key),
    claim: (scope, key, fingerprint, leaseMs, ttlMs) => claim(context, scope, key, fingerprint, leaseMs, ttlMs),
  }
}
