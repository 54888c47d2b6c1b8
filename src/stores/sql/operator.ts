import type { KeyInspection, StoreUninstall, TableStats } from '../../ports/operator.js'
import { statusOf } from '../inspection.js'
import type { StoreDriver } from './driver.js'
import type { OperatorStatements, StatsStatements } from './operator-dialect.js'
import type { Result, Row, Statement } from './statement.js'
import { toDate, toIso } from './values.js'

/** What an operator reads of a SQL store (`StoreOperator`'s `inspect`, `stats`, `expiredCount`), written once over its dialect's statements. */
export interface OperatorReads {
  /** idem's tables that exist, in order. */
  tables(): Promise<Set<string>>
  inspect(scope: string, key: string): Promise<KeyInspection>
  /** Counts whole tables: run it off-peak on a large one. */
  stats(windowMs: number): Promise<TableStats>
  expiredCount(): Promise<number>
}

type Reader = Pick<StoreDriver<unknown, boolean | Promise<boolean>>, 'query'>

/**
 * `idem uninstall` on a SQL store: the statements that drop each of idem's objects found
 * now, run in one transaction (all or none; the version table goes with the rest).
 */
export function sqlUninstall(statements: Pick<OperatorStatements, 'objects'>, driver: Reader & Pick<StoreDriver<unknown, boolean | Promise<boolean>>, 'transaction'>): StoreUninstall {
  const plan = async (): Promise<string[]> => (await driver.query(statements.objects)).rows.map((row) => String((row as Row).drop))
  return {
    plan,
    async run() {
      const drops = await plan()
      if (drops.length > 0) await driver.transaction(drops.map((text) => ({ text, values: [] })))
      return drops
    },
  }
}

/** The operator's reads over `statements`, each statement run on its own through `driver` (those of one command at once). */
export function operatorReads(statements: OperatorStatements, driver: Reader): OperatorReads {
  const rows = async (statement: Statement): Promise<Row[]> => (await driver.query(statement)).rows as Row[]
  const tables = async (): Promise<Set<string>> => new Set((await rows(statements.tables)).map((row) => String(row.name)))
  return {
    tables,
    async inspect(scope, key) {
      const parts = statements.inspect(await tables(), scope, key, Date.now())
      const [now, record, lease, steps] = await Promise.all([rows(parts.now), rows(parts.record), optional(rows, parts.lease), optional(rows, parts.steps)])
      return inspection(scope, key, now[0]!, record[0], lease[0], steps)
    },
    async stats(windowMs) {
      return statsOf(await readStats(driver, statements.stats(await tables(), windowMs, Date.now())), windowMs)
    },
    async expiredCount() {
      const counts = await Promise.all(statements.expired(await tables(), Date.now()).map(rows))
      return counts.reduce((sum, [row]) => sum + Number(row?.n ?? 0), 0)
    },
  }
}

function optional(rows: (statement: Statement) => Promise<Row[]>, statement: Statement | undefined): Promise<Row[]> {
  return statement === undefined ? Promise.resolve([]) : rows(statement)
}

/** True as Postgres and SQLite say it. */
function isTrue(value: unknown): boolean {
  return value === true || value === 1 || value === 1n
}

function inspection(scope: string, key: string, now: Row, record: Row | undefined, lease: Row | undefined, steps: Row[]): KeyInspection {
  const report: KeyInspection = { scope, key, now: toDate(now.now).toISOString() }
  if (record !== undefined) {
    report.record = {
      fingerprint: String(record.fingerprint),
      createdAt: toDate(record.created_at).toISOString(),
      expiresAt: toDate(record.expires_at).toISOString(),
      expired: isTrue(record.expired),
      status: statusOf(record.head as string | null),
      outcomeBytes: Number(record.bytes),
    }
  }
  if (lease !== undefined) {
    const state = lease.state as 'held' | 'free' | 'completed'
    report.lease = {
      state,
      fingerprint: String(lease.fingerprint),
      token: String(lease.token),
      leaseUntil: toIso(lease.lease_until),
      leaseLive: state === 'held' && isTrue(lease.lease_live),
      expiresAt: toDate(lease.expires_at).toISOString(),
      expired: isTrue(lease.expired),
      status: statusOf(lease.head as string | null),
      steps: steps.map((row) => ({ name: String(row.name), savedAt: toIso(row.created_at), token: String(row.token) })),
    }
  }
  return report
}

type StatsRows = Record<keyof StatsStatements, Row[] | undefined>

/** Every part's rows, read at once; a size the database cannot tell reads as unknown (undefined). */
async function readStats(driver: Reader, parts: StatsStatements): Promise<StatsRows> {
  const read = (statement: Statement | undefined, sizeOnly = false): Promise<Row[] | undefined> =>
    statement === undefined
      ? Promise.resolve(undefined)
      : driver.query(statement).then(
          (result: Result) => result.rows as Row[],
          (error: unknown) => {
            if (sizeOnly) return undefined
            throw error
          },
        )
  const [keys, byStatus, byDay, keyBytes, leases, leaseBytes, inbox, outbox, deadLetters] = await Promise.all([
    read(parts.keys),
    read(parts.byStatus),
    read(parts.byDay),
    read(parts.keyBytes, true),
    read(parts.leases),
    read(parts.leaseBytes, true),
    read(parts.inbox),
    read(parts.outbox),
    read(parts.deadLetters),
  ])
  return { keys, byStatus, byDay, keyBytes, leases, leaseBytes, inbox, outbox, deadLetters }
}

function statsOf(rows: StatsRows, windowMs: number): TableStats {
  const num = (value: unknown): number => Number(value ?? 0)
  const bytes = (part: Row[] | undefined): number | null => (part?.[0]?.bytes == null ? null : num(part[0].bytes))
  const k = rows.keys?.[0] ?? {}
  const byState: Record<string, number> = { held: 0, free: 0, completed: 0 }
  let leasesExpired = 0
  for (const row of rows.leases ?? []) {
    byState[String(row.state)] = num(row.n)
    leasesExpired += num(row.expired)
  }
  const i = rows.inbox?.[0] ?? {}
  const o = rows.outbox?.[0] ?? {}
  const d = rows.deadLetters?.[0] ?? {}
  const recent = num(k.recent)
  return {
    windowMs,
    keys: {
      total: num(k.total),
      live: num(k.live),
      expired: num(k.total) - num(k.live),
      recent,
      byStatus: Object.fromEntries((rows.byStatus ?? []).map((row) => [String(row.status), num(row.n)])),
      byDay: (rows.byDay ?? []).map((row) => ({ day: String(row.day), rows: num(row.n) })),
      rowsPerDay: recent / (windowMs / 86_400_000),
      bytes: bytes(rows.keyBytes),
    },
    leases: { byState, expired: leasesExpired, bytes: bytes(rows.leaseBytes) },
    inbox: { live: num(i.live), expired: num(i.expired) },
    outbox: { pending: num(o.pending), delivered: num(o.delivered), oldestPendingAgeMs: o.oldest == null ? null : Math.round(num(o.oldest)) },
    deadLetters: { total: num(d.total), recent: num(d.recent) },
  }
}
