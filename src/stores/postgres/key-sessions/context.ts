import type { Claim } from '../../../core/store.js'
import type { RecentKeys } from '../recent-keys.js'
import type * as sql from '../dialect/index.js'
import type { PgPool } from '../driver/types.js'
import type { Step, Wire } from '../driver/wire.js'

/** What every key session over one key table shares: made once, with the store. */
export interface KeyContext {
  readonly pool: PgPool
  readonly schema: string
  readonly table: sql.KeyTable
  readonly wire: Wire
  /** BEGIN at the store's isolation level: the first step of an owned claim's round trip. */
  readonly opening: Step
  /** Keys this store committed lately: a retry of one is first read outside any transaction. */
  readonly recorded: RecentKeys
}

// Claims that carry nothing are made once.
const NEW: Claim = { state: 'new' }
const LOCKED: Claim = { state: 'locked' }
const STALE: Claim = { state: 'stale' }

/** Reads a claim's row (`idem_claim`'s `state`, and the record it found). */
export function toClaim(result: { rows: unknown[] }): Claim {
  const row = result.rows[0] as { state: string; fingerprint: string | null; outcome: string | null } | undefined
  switch (row?.state) {
    case 'new':
      return NEW
    case 'found':
      return { state: 'found', record: { fingerprint: row.fingerprint!, outcome: row.outcome! } }
    case 'locked':
      return LOCKED
    case 'stale':
      return STALE
    default:
      throw new Error(`idem_claim returned an unexpected row: ${JSON.stringify(row)}`)
  }
}
