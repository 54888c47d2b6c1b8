import type { EventStream, LeaseEvent } from './events.js'

/**
 * Reports a change of a key's lease (leased engine): to the listeners when anyone
 * listens, and a lost lease always, as one line to the stream's logger too (the store
 * and the scope; the call's outcome was not stored, and whoever holds the key now
 * finishes it).
 */
export function reportLease(events: EventStream, change: LeaseEvent['change'], store: string, scope: string): void {
  if (change === 'lost') {
    events.fail(
      { type: 'lease', change, store, scope },
      { level: 'warn', code: 'lease-lost', message: `idem: a call in scope ${scope} lost its lease on ${store}; its outcome was not stored`, fields: { store, scope } },
    )
  } else if (events.listening) {
    events.emit({ type: 'lease', change, store, scope })
  }
}
