import type { TableStats } from '../../../ports/operator.js'
import { HEAD_SK, num, str } from '../items.js'
import type { Wire } from '../wire.js'
import { scan } from './scan.js'

/** Counts of leases by state, inbox ids and dead letters (all, and those of the last `windowMs`), by one scan of the table. */
export async function stats(wire: Wire, windowMs: number): Promise<TableStats> {
  const t = Date.now()
  const since = t - windowMs
  const stats: TableStats = {
    windowMs,
    leases: { byState: { held: 0, free: 0, completed: 0 }, expired: 0, bytes: null },
    inbox: { live: 0, expired: 0 },
    deadLetters: { total: 0, recent: 0 },
  }
  for await (const { items } of scan(wire, 'stats', { projection: '#pk, #sk, #state, #expiresAt, #deadAt' })) {
    for (const item of items) {
      const pk = str(item, 'pk') ?? ''
      const head = str(item, 'sk') === HEAD_SK
      const expired = (num(item, 'expiresAt') ?? 0) <= t
      if (pk.startsWith('lease#') && head) {
        const state = str(item, 'state') ?? 'held'
        stats.leases.byState[state] = (stats.leases.byState[state] ?? 0) + 1
        if (expired) stats.leases.expired++
      } else if (pk.startsWith('inbox#') && head) {
        if (expired) stats.inbox.expired++
        else stats.inbox.live++
      } else if (pk.startsWith('dead#')) {
        stats.deadLetters.total++
        if ((num(item, 'deadAt') ?? 0) > since) stats.deadLetters.recent++
      }
    }
  }
  return stats
}
