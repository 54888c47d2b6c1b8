import { reportWarning } from '../../../core/errors/warning.js'

const warned = new WeakSet<object>()

/**
 * Warns once per pool that has no `connectionTimeoutMillis`. Without it `pg.Pool` waits
 * for a connection without limit: when Postgres stops answering (a frozen server, a
 * dropped network path) or every connection stays busy, each request hangs instead of
 * failing at once with StoreUnavailableError (503 with Retry-After). idem cannot bound
 * that wait from outside: a connection attempt it gave up on would keep its place in
 * the pool for ever, and the service would not recover without a restart; the pool's
 * own timeout destroys the attempt.
 */
export function warnWithoutConnectTimeout(pool: object, caller: string): void {
  const options = (pool as { options?: { connectionTimeoutMillis?: unknown } }).options
  // Not a pg.Pool (a wrapper of the same shape): nothing to read.
  if (options === null || typeof options !== 'object' || warned.has(pool)) return
  if (typeof options.connectionTimeoutMillis === 'number' && options.connectionTimeoutMillis > 0) return
  warned.add(pool)
  reportWarning({
    code: 'pool-without-connect-timeout',
    source: caller,
    message:
      `idem ${caller}: the pg.Pool has no connectionTimeoutMillis, so if Postgres stops answering (or every connection stays busy) ` +
      'requests wait for a connection without limit instead of failing with StoreUnavailableError (503). ' +
      'Set one, e.g. new pg.Pool({ connectionTimeoutMillis: 5_000 }).',
  })
}
