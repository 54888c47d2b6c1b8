import { IdemError } from '../../../core/errors/idem-error.js'
import { MigrationRequiredError } from '../../../core/errors/migration-required.js'
import { StoreUnavailableError } from '../../../core/errors/store-unavailable.js'

// SQLSTATEs meaning the schema was never migrated.
const MISSING_OBJECT = new Set(['42P01', '42883', '3F000'])
// Connection-level failures: class 08, admin/crash shutdown, too many connections, cannot connect now,
// and the server ending a session for idling in a transaction (25P03) or at all (57P05).
const UNAVAILABLE_STATES = new Set(['57P01', '57P02', '57P03', '53300', '53400', '25P03', '57P05'])
const UNAVAILABLE_ERRNO = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH'])
const UNAVAILABLE_MESSAGES = [
  'Cannot use a pool after calling end',
  'Connection terminated',
  'timeout exceeded when trying to connect',
  'Client has encountered a connection error',
  'Client was closed and is not queryable',
  // pg's own query_timeout: the server stopped answering mid-call.
  'Query read timeout',
]

/** Maps a driver error from one of the store's own statements to idem's typed errors. */
export function classifyPgError(error: unknown, schema: string): unknown {
  // Already idem's (a held client's lost connection): classifying again would only wrap it.
  if (!(error instanceof Error) || error instanceof IdemError) return error
  const code = (error as { code?: unknown }).code
  if (typeof code === 'string' && MISSING_OBJECT.has(code)) {
    return new MigrationRequiredError(
      `idem's Postgres tables are missing in schema "${schema}" (${error.message}). ` +
        `Run the migration: \`npx idem migrate --postgres <url> --schema ${schema}\` or \`await store.migrate()\``,
      { cause: error },
    )
  }
  // A key expiring on a day whose partition nobody created (keyLayout 'daily-partitions').
  if (code === '23514' && error.message.includes('no partition of relation')) {
    return new MigrationRequiredError(
      `idem's key table in schema "${schema}" has no partition for this key's expiry day (${error.message}). ` +
        'Partitions are created ahead by `store.prune()` and `store.migrate()` (`npx idem prune --key-layout daily-partitions`): run prune at least weekly',
      { cause: error },
    )
  }
  if (
    (typeof code === 'string' && (code.startsWith('08') || UNAVAILABLE_STATES.has(code) || UNAVAILABLE_ERRNO.has(code))) ||
    UNAVAILABLE_MESSAGES.some((m) => error.message.includes(m))
  ) {
    return new StoreUnavailableError(`Postgres is unavailable: ${error.message}`, { cause: error })
  }
  return error
}
