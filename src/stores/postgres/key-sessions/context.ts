import type { Claim } from '../../../core/store.js'
import type { RecentKeys } from '../recent-keys.js'
import * as sql from '../dialect/index.js'
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

/** Reads a claim's row: the value of the key table's claim function (see `sql.readClaim`). */
export function toClaim(result: { rows: unknown[] }): Claim {
  const row = result.rows[0] as { claim?: unknown } | undefined
  return sql.readClaim(row?.claim)
}
