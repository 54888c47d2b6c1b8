/**
 * What the data helpers report to the event stream (`idemEvents`): one `reconcile` event
 * per run of `reconcile`. Added to the core's `IdemEventTypes`, so `IdemEvent` holds it.
 */

declare module '../core/events.js' {
  interface IdemEventTypes {
    /** A run of `reconcile`: `ReconcileEvent`. */
    reconcile: ReconcileEvent
  }
}

/** One run of `reconcile`: how many rows of a table that should be unique are duplicates. */
export interface ReconcileEvent {
  type: 'reconcile'
  table: string
  columns: readonly string[]
  totalRows: number
  duplicateRows: number
  /** `duplicateRows / totalRows` (0 for an empty table). */
  duplicateRate: number
  threshold: number
  exceeded: boolean
}
