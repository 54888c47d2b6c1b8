import type { CliIo } from './io.js'

/** Where a command acts: a Postgres URL (and schema) or a SQLite file. */
export type StoreTarget = { kind: 'postgres'; url: string; schema: string; keyLayout?: 'table' | 'daily-partitions' } | { kind: 'sqlite'; file: string }

/**
 * Opens the idem store a command acts on, runs `work` with it, and closes it. The
 * drivers are optional peer dependencies, loaded only when asked for.
 */
export async function withStore<T>(
  target: StoreTarget,
  work: (store: { migrate(): unknown; prune(options?: { batchSize?: number }): Promise<number> }) => Promise<T>,
): Promise<T> {
  if (target.kind === 'postgres') {
    const { default: pg } = await import('pg')
    const { postgresStore } = await import('../stores/postgres/index.js')
    const pool = new pg.Pool({ connectionString: target.url, max: 2, connectionTimeoutMillis: 10_000 })
    try {
      return await work(postgresStore({ pool, schema: target.schema, ...(target.keyLayout === undefined ? {} : { keyLayout: target.keyLayout }) }))
    } finally {
      await pool.end()
    }
  }
  const { default: Database } = await import('better-sqlite3')
  const { sqliteStore } = await import('../stores/sqlite/index.js')
  const db = new Database(target.file)
  try {
    db.pragma('journal_mode = WAL')
    return await work(sqliteStore({ db }))
  } finally {
    db.close()
  }
}

/** Reads `--postgres <url> [--schema s]` or `--sqlite <file>`; reports a usage error otherwise. */
export function storeTarget(
  values: { postgres?: string | undefined; sqlite?: string | undefined; schema?: string | undefined },
  io: CliIo,
  usage: string,
): StoreTarget | undefined {
  if ((values.postgres === undefined) === (values.sqlite === undefined)) {
    io.err(`pass exactly one of --postgres <url> or --sqlite <file>\n\n${usage}`)
    return undefined
  }
  return values.postgres !== undefined
    ? { kind: 'postgres', url: values.postgres, schema: values.schema ?? 'public' }
    : { kind: 'sqlite', file: values.sqlite! }
}
