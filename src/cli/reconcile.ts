import { parseFlags } from './args.js'
import { EXIT, type CliIo } from './io.js'
import { DEFAULT_RECONCILE_LIMIT, DEFAULT_RECONCILE_THRESHOLD, reconcile, type ReconcileReport } from '../data/reconcile.js'


const USAGE = `usage: idem reconcile (--postgres <url> | --sqlite <file>) --table <name> --columns <a,b,...>
                      [--schema <name>] [--threshold <rate>] [--limit <n>] [--json]

Reports rows of <table> that share the values of <columns> (which should be unique).
Exits 1 when the duplicate rate is above --threshold (default ${DEFAULT_RECONCILE_THRESHOLD} = 0.01%), 2 on a usage or connection error.`

/**
 * `idem reconcile`: runs `reconcile` against a Postgres URL or a SQLite file and exits
 * non-zero when the duplicate rate is above the threshold, for cron jobs and CI.
 * @returns the exit code (`EXIT`)
 * @example await reconcileCommand(['--sqlite', 'app.db', '--table', 'summaries', '--columns', 'intake_id,prompt_version'])
 * @see docs/data.md
 */
export async function reconcileCommand(argv: string[], io: CliIo = { out: console.log, err: console.error }): Promise<number> {
  const values = parseFlags(
    argv,
    {
      postgres: { type: 'string' },
      sqlite: { type: 'string' },
      schema: { type: 'string' },
      table: { type: 'string' },
      columns: { type: 'string' },
      threshold: { type: 'string' },
      limit: { type: 'string' },
      json: { type: 'boolean', default: false },
    } as const,
    USAGE,
    io,
  )
  if (typeof values === 'number') return values
  if ((values.postgres === undefined) === (values.sqlite === undefined) || values.table === undefined || values.columns === undefined) {
    io.err(USAGE)
    return EXIT.usage
  }
  const common = {
    table: values.table,
    columns: values.columns.split(',').map((c) => c.trim()),
    threshold: values.threshold === undefined ? DEFAULT_RECONCILE_THRESHOLD : Number(values.threshold),
    limit: values.limit === undefined ? DEFAULT_RECONCILE_LIMIT : Number(values.limit),
    ...(values.schema === undefined ? {} : { schema: values.schema }),
  }

  let report: ReconcileReport
  try {
    report = values.postgres !== undefined ? await onPostgres(values.postgres, common) : await onSqlite(values.sqlite!, common)
  } catch (error) {
    io.err(`idem reconcile: ${(error as Error).message}`)
    return EXIT.usage
  }
  if (values.json) io.out(JSON.stringify(report))
  else for (const line of describe(report)) io.out(line)
  return report.exceeded ? EXIT.exceeded : EXIT.ok
}

type Common = Omit<Parameters<typeof reconcile>[0], 'client' | 'db'>

async function onPostgres(url: string, options: Common): Promise<ReconcileReport> {
  // Optional peer dependency: loaded only when asked for.
  const { default: pg } = await import('pg')
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return await reconcile({ ...options, client })
  } finally {
    await client.end()
  }
}

async function onSqlite(file: string, options: Common): Promise<ReconcileReport> {
  const { default: Database } = await import('better-sqlite3')
  const db = new Database(file, { readonly: true, fileMustExist: true })
  try {
    return await reconcile({ ...options, db })
  } finally {
    db.close()
  }
}

function describe(report: ReconcileReport): string[] {
  const percent = (rate: number): string => `${(rate * 100).toPrecision(3)}%`
  const lines = [
    `${report.table} (${report.columns.join(', ')}): ${report.duplicateRows} duplicate rows of ${report.totalRows}, ` +
      `${percent(report.duplicateRate)} (threshold ${percent(report.threshold)})${report.exceeded ? ' — EXCEEDED' : ''}`,
  ]
  for (const group of report.groups) lines.push(`  ${group.rows} rows: ${JSON.stringify(group.values)}`)
  if (report.groupCount > report.groups.length) lines.push(`  … and ${report.groupCount - report.groups.length} more groups`)
  return lines
}
