import type { InboxSession } from '../ports/inbox-table.js'

/**
 * The inbox session of a message this delivery does not own: its id was already
 * processed, or another delivery holds it for longer than the wait. Nothing is held, so
 * every step of it is a no-op; `tx` is only there to satisfy the shape.
 */
export function settledInboxSession<Tx>(state: 'processed' | 'in-flight', tx: Tx): InboxSession<Tx> {
  return {
    state,
    tx,
    takeFailures: async () => undefined,
    deadLetter: async () => {},
    commit: async () => {},
    rollback: async () => {},
  }
}
