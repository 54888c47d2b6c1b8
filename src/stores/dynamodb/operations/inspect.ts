import { GetItemCommand } from '@aws-sdk/client-dynamodb'
import type { KeyInspection } from '../../../ports/operator.js'
import { statusOf } from '../../inspection.js'
import { HEAD_SK, S, STEP_SK, leasePk, num, str, type Item } from '../items.js'
import { itemsUnder } from '../leased/partition.js'
import type { Wire } from '../wire.js'

type InspectedSteps = NonNullable<KeyInspection['lease']>['steps']

/** One leased key's claim, lease and steps, by this machine's clock. */
export async function inspect(wire: Wire, scope: string, key: string): Promise<KeyInspection> {
  const t = Date.now()
  const iso = (ms: number): string => new Date(ms).toISOString()
  const pk = leasePk(scope, key)
  const { Item: head } = await wire.send<{ Item?: Item }>('inspect', new GetItemCommand({ TableName: wire.table, Key: { pk: S(pk), sk: S(HEAD_SK) }, ConsistentRead: true }))
  const report: KeyInspection = { scope, key, now: iso(t) }
  const state = str(head, 'state')
  if (head === undefined || (state !== 'held' && state !== 'free' && state !== 'completed')) return report
  const expiresAt = num(head, 'expiresAt') ?? 0
  // A free or completed key keeps no lease; a completed key's steps are garbage.
  const leaseUntil = state === 'held' ? num(head, 'leaseUntil') : undefined
  report.lease = {
    state,
    fingerprint: str(head, 'fp') ?? '',
    token: String(num(head, 'token') ?? ''),
    leaseUntil: leaseUntil === undefined ? null : iso(leaseUntil),
    leaseLive: leaseUntil !== undefined && leaseUntil > t,
    expiresAt: iso(expiresAt),
    expired: expiresAt <= t,
    status: statusOf(str(head, 'outcome')),
    steps: state === 'completed' ? [] : await steps(wire, pk, num(head, 'gen') ?? 0),
  }
  return report
}

/** The step heads of a leased key saved by its current lifetime (tokens from `gen` on). */
async function steps(wire: Wire, pk: string, gen: number): Promise<InspectedSteps> {
  const found: InspectedSteps = []
  for (const item of await itemsUnder(wire, 'inspect', pk, STEP_SK)) {
    const name = str(item, 'name')
    const token = num(item, 'token') ?? 0
    // Parts carry no name; steps of an earlier lifetime are ignored by the store too.
    if (name !== undefined && token >= gen) found.push({ name, savedAt: null, token: String(token) })
  }
  return found.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
}
