import type { Command } from 'commander'
import { DEFAULT_RECONCILE_LIMIT, DEFAULT_RECONCILE_THRESHOLD, reconcile, type ReconcileReport } from '../data/reconcile.js'
import { printJson, type CommandContext } from './context.js'
import { CliError } from '../core/errors/cli-error.js'
import { EXIT } from './io.js'
import { count, identifier, list, rate } from './parse.js'
import { flagOf, storeError, storesFor, targetOf, withTargetOptions } from './target.js'

interface Flags {
  /** Postgres' `--schema`: named, it qualifies --table; otherwise the connection's search path decides. */
  schema?: string
  table: string
  columns: string[]
  threshold: number
  limit: number
  json?: boolean
}

export function registerReconcile(program: Command, { io, exit }: CommandContext): void {
  const command = program
    .command('reconcile')
    .summary('report rows that should be unique but are not; exit 1 above --threshold')
    .description(
      'Reports rows of <table> that share the values of <columns> (which should identify a row): the after-the-fact check that retries and redeliveries ' +
        `were absorbed. Exits 1 when the duplicate rate is above --threshold (default ${DEFAULT_RECONCILE_THRESHOLD} = 0.01%), for cron jobs and CI. ` +
        'It scans the table: run it on a replica or off-peak.',
    )
  withTargetOptions(command, 'reconcile')
    .requiredOption('--table <name>', 'the table to check', identifier)
    .requiredOption('--columns <a,b,...>', 'the columns that should be unique together', list)
    .option('--threshold <rate>', 'the duplicate rate above which to exit 1 (0.0001, or 0.01%)', rate, DEFAULT_RECONCILE_THRESHOLD)
    .option('--limit <n>', 'how many offending groups to list', count(0, 10_000), DEFAULT_RECONCILE_LIMIT)
    .option('--json', 'print the report as JSON')
    .addHelpText(
      'after',
      `
Examples:
  $ idem reconcile --sqlite data/app.db --table summaries --columns intake_id,prompt_version
  $ idem reconcile --postgres postgres://app@replica:5432/app --table orders --columns account,idempotency_key --json`,
    )
    .action(async (flags: Flags, self: Command) => {
      const target = targetOf(self, 'reconcile')
      // Without --schema the connection's search path decides, as in SQL.
      const schema = self.getOptionValueSource('schema') === 'default' ? undefined : flags.schema
      const options = { table: flags.table, columns: flags.columns, threshold: flags.threshold, limit: flags.limit, ...(schema === undefined ? {} : { schema }) }
      const report = await target.withOperator({ readonly: true }, ({ backend, sql }) => {
        if (sql === undefined) throw new CliError(`${backend} has no SQL tables to reconcile`, `pass ${storesFor('reconcile').map(flagOf).join(' or ')}`)
        return reconcile({ ...options, ...sql }).catch((error: unknown) => {
          if (sql.dialect.namesMissing(error)) {
            throw new CliError((error as Error).message, `check --table and --columns${schema === undefined ? '' : ' (and --schema)'} against the database`, { cause: error })
          }
          throw error
        })
      }).catch((error: unknown) => {
        throw storeError(error, target)
      })
      if (flags.json) printJson(io, report)
      else for (const line of describe(report)) io.out(line)
      if (report.exceeded) exit(EXIT.exceeded)
    })
}

function describe(report: ReconcileReport): string[] {
  const percent = (value: number): string => `${(value * 100).toPrecision(3)}%`
  const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`
  const lines = [
    `${report.table} (${report.columns.join(', ')}): ${plural(report.duplicateRows, 'duplicate row')} of ${report.totalRows}, ` +
      `${percent(report.duplicateRate)} (threshold ${percent(report.threshold)})${report.exceeded ? ' — EXCEEDED' : ''}`,
  ]
  for (const group of report.groups) lines.push(`  ${group.rows} rows: ${JSON.stringify(group.values)}`)
  if (report.groupCount > report.groups.length) lines.push(`  … and ${plural(report.groupCount - report.groups.length, 'more group')}`)
  return lines
}
