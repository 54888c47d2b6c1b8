import { IdemError } from '../../../core/errors/idem-error.js'
import { MigrationRequiredError } from '../../../core/errors/migration-required.js'
import { StoreUnavailableError } from '../../../core/errors/store-unavailable.js'

// The server's error numbers (errno) the store reads.
/** ER_DUP_ENTRY: a second row with the same unique key. */
export const DUPLICATE_KEY = 1062
/** ER_LOCK_DEADLOCK: InnoDB rolled back the whole transaction, one of a deadlock's. */
export const DEADLOCK = 1213
/** ER_LOCK_WAIT_TIMEOUT and ER_LOCK_DEADLOCK: InnoDB gave up on a lock; running the transaction again is safe. */
const RETRYABLE = new Set([1205, DEADLOCK])
/** ER_NO_SUCH_TABLE, ER_SP_DOES_NOT_EXIST: idem's tables or routines are missing. */
const MISSING = new Set([1146, 1305])
// The server cannot serve now: too many connections, shutting down, the connection
// killed (MariaDB's ER_CONNECTION_KILLED; MySQL's ER_QUERY_INTERRUPTED after a KILL),
// read-only, out of resources.
const UNAVAILABLE_ERRNO = new Set([1040, 1053, 1077, 1078, 1079, 1080, 1081, 1152, 1158, 1159, 1160, 1161, 1290, 1317, 1836, 1927, 2002, 2003, 2006, 2013, 4031])
const UNAVAILABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'PROTOCOL_CONNECTION_LOST', 'PROTOCOL_SEQUENCE_TIMEOUT'])
const UNAVAILABLE_MESSAGES = ['Pool is closed', "Can't add new command when connection is in closed state", "Can't write in closed state", 'Connection lost']

/** The server's error number of a mysql2 error, if it has one. */
export function errnoOf(error: unknown): number | undefined {
  const errno = (error as { errno?: unknown } | null)?.errno
  return typeof errno === 'number' ? errno : undefined
}

/**
 * Maps a mysql2 error from one of the store's own statements to idem's typed errors:
 * missing tables or routines are `MigrationRequiredError`; a lost connection, a server
 * that cannot serve, a deadlock and a lock wait that ran out are `StoreUnavailableError`
 * (503, retry after a second: InnoDB rolled the statement or the transaction back, and
 * the retry runs it again or replays). Anything else passes unchanged, as do idem's own errors.
 */
export function classifyMysqlError(error: unknown): unknown {
  if (!(error instanceof Error) || error instanceof IdemError) return error
  const errno = errnoOf(error)
  const code = (error as { code?: unknown }).code
  if (errno !== undefined && MISSING.has(errno) && /idem_/.test(error.message)) {
    return new MigrationRequiredError(`idem's MySQL tables are missing (${error.message}). Run the migration: \`await store.migrate()\` or \`npx idem migrate --mysql <url>\``, {
      cause: error,
    })
  }
  if (errno !== undefined && RETRYABLE.has(errno)) return new StoreUnavailableError(`MySQL gave up on a lock: ${error.message}`, { cause: error })
  if (
    (errno !== undefined && UNAVAILABLE_ERRNO.has(errno)) ||
    (typeof code === 'string' && UNAVAILABLE_CODES.has(code)) ||
    (error as { fatal?: unknown }).fatal === true ||
    UNAVAILABLE_MESSAGES.some((message) => error.message.includes(message))
  ) {
    return new StoreUnavailableError(`MySQL is unavailable: ${error.message}`, { cause: error })
  }
  return error
}
