import type { Wire } from '../wire.js'

/** What the leased store's operations share: made once, with the store. */
export interface LeasedContext {
  readonly wire: Wire
  /** The table every command names (`wire.table`). */
  readonly TableName: string
  /** The caller's clock: DynamoDB's expressions have none of their own. */
  readonly now: () => number
}
