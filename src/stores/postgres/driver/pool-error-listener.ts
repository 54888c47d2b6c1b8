import { reportWarning } from '../../../core/errors/warning.js'

const warned = new WeakSet<object>()

/**
 * Warns once per pool that has no `'error'` listener. `pg.Pool` emits `'error'` when an
 * idle connection it holds fails (the server restarted, a proxy or firewall dropped it):
 * with nobody listening, Node throws the event's error and the process dies, however
 * idle it was. idem cannot fix that from inside (a listener of its own would hide the
 * app's mistake from the app), so it says so at construction, before the first drop.
 */
export function warnWithoutErrorListener(pool: object, caller: string): void {
  const listenerCount = (pool as { listenerCount?: (event: string) => number }).listenerCount
  // Not an EventEmitter (a wrapper of the pool's shape): nothing to read.
  if (typeof listenerCount !== 'function' || warned.has(pool)) return
  if (listenerCount.call(pool, 'error') > 0) return
  warned.add(pool)
  reportWarning({
    code: 'pool-without-error-listener',
    source: caller,
    message:
      `idem ${caller}: the pg.Pool has no 'error' listener, so an idle connection that Postgres or the network drops ` +
      "crashes the process. Attach one, e.g. pool.on('error', (error) => logger.warn(error)).",
  })
}
