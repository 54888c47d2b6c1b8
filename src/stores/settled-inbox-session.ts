import type { InboxSession } from '../ports/inbox-table.js'

/**
 * The inbox session of a message this delivery does not own: its id was already
 * processed, another delivery holds it for longer than the wait, or (`stale`) the claim
 * must be tried again in a fresh transaction. Nothing is held, so every step of it is a
 * no-op; `tx` is only there to satisfy the shape.
 */
export function settledInboxSession<Tx>(state: 'processed' | 'in-flight' | 'stale', tx: Tx): InboxSession<Tx> {
  return {
    state,
    tx,
    takeFailures: async () => undefined,
    deadLetter: async () => {},
    commit: async () => {},
    rollback: async () => {},
  }
}
