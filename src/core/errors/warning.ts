import { idemEvents, warn, type WarningEvent } from '../events.js'

/**
 * Reports a problem that is not an error yet (a pool that will hang when its database
 * stops answering, a pool whose errors nobody hears) as a `warning` event on idem's one
 * event stream (`idemEvents`), or on the console when nobody listens. The stores' way to
 * warn: they reach core through its errors only.
 * @example reportWarning({ code: 'pool-without-connect-timeout', source: 'postgresStore', message: 'idem postgresStore: …' })
 */
export function reportWarning(event: Omit<WarningEvent, 'type'>): void {
  warn(idemEvents, event)
}
