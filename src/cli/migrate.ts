import type { Command } from 'commander'
import type { SchemaMigrations, StoreOperator } from '../ports/operator.js'
import { printJson, type CommandContext } from './context.js'
import { CliError } from '../core/errors/cli-error.js'
import { count } from './parse.js'
import { storeError, targetOf, withTargetOptions, type Target } from './target.js'

interface Flags {
  dryRun?: boolean
  baseline?: number
  /** Postgres' `--key-layout`, for the note a dry run prints. */
  keyLayout?: string
  json?: boolean
}

interface MigrateReport {
  target: string
  from: number
  to: number
  /** The versions this run found to apply, each with what it does, read before applying any. */
  pending: PendingVersion[]
  applied: number[]
  dryRun: boolean
  /** The SQL a dry run would apply. */
  statements?: string[]
}

/** A version not yet applied, as the migration script names it. */
interface PendingVersion {
  version: number
  description: string
}

export function registerMigrate(program: Command, { io }: CommandContext): void {
  const command = program
    .command('migrate')
    .summary("create or upgrade idem's tables")
    .description(
      "Creates or upgrades idem's tables to this version's schema, in one transaction under a lock (safe to run from many instances at once). " +
        'It prints the versions it will apply, and what each does, before applying them; --dry-run prints their SQL instead. ' +
        'Each version applied is recorded in idem_migrations.',
    )
  withTargetOptions(command, 'migrate')
    .option('--dry-run', 'print the SQL that would be applied, and apply nothing')
    .option('--baseline <version>', 'record versions up to <version> as applied without running them (tables created by hand)', count(1, 1_000))
    .option('--json', 'print the result as JSON')
    .addHelpText(
      'after',
      `
Examples:
  $ idem migrate --postgres postgres://app@db.internal:5432/app --schema idem
  $ idem migrate --sqlite data/app.db --dry-run
  $ idem migrate --postgres postgres://app@db.internal:5432/app --key-layout daily-partitions`,
    )
    .action(async (flags: Flags, self: Command) => {
      const target = targetOf(self, 'migrate')
      // What it will do, printed before it does it (with --json, in the report instead).
      const announce = flags.json ? undefined : (from: number, pending: PendingVersion[], transactional: boolean) => io.out(planText(from, pending, transactional))
      const report = await migrate(target, flags, announce).catch((error: unknown) => {
        throw storeError(error, target)
      })
      if (flags.json) return printJson(io, report)
      if (report.dryRun) {
        if (report.statements!.length === 0) io.out(`-- already at version ${report.to}: nothing to apply`)
        else {
          io.out(`-- from version ${report.from} to ${report.to}; nothing was applied`)
          for (const statement of report.statements!) io.out(statement.startsWith('--') ? statement : `${statement};\n`)
          if (flags.keyLayout === 'daily-partitions') io.out(DAY_PARTITIONS_NOTE)
        }
      } else if (report.applied.length === 0) io.out(`idem: schema already at version ${report.to}`)
      else io.out(`idem: migrated from version ${report.from} to ${report.to} (applied ${report.applied.join(', ')})`)
    })
}

// What a real migrate does beyond the versioned script with daily partitions (see maintainDayPartitions).
const DAY_PARTITIONS_NOTE =
  '-- then, each in a short transaction of its own: CREATE TABLE IF NOT EXISTS for the partitions of idem_keys_by_day ' +
  "of today (UTC, on the server's clock) and the days ahead, as idem prune makes them"

/** The plan, as printed before it is carried out. */
function planText(from: number, pending: PendingVersion[], transactional: boolean): string {
  const how = transactional ? 'in one transaction' : 'each statement safe to run again (DDL commits as it runs here)'
  return [`idem: schema at version ${from}; applying, ${how}:`, ...pending.map(({ version, description }) => `  version ${version}: ${description}`)].join('\n')
}

async function migrate(target: Target, flags: Flags, announce?: Announce): Promise<MigrateReport> {
  // Only a real migrate may create a new database file; a dry run reads a missing one as empty.
  const access = { create: !flags.dryRun, dryRun: flags.dryRun === true }
  return target.withOperator(access, (operator) => migrateWith(operator, flags, target.flags, announce))
}

/** Told the version found and what will be applied, before anything is (not called when nothing is to be). */
type Announce = (from: number, pending: PendingVersion[], transactional: boolean) => void

/** The versions a migration script applies, from its `-- version N: description` lines. */
function pendingIn(script: string[]): PendingVersion[] {
  const pending: PendingVersion[] = []
  for (const line of script) {
    const match = /^-- version (\d+): (.*)$/.exec(line)
    if (match !== null) pending.push({ version: Number(match[1]), description: match[2]! })
  }
  return pending
}

/**
 * What `idem migrate` does on a connected store: `where` is the target's flags, for the
 * fixes it suggests.
 * @example await target.withOperator(access, (operator) => migrateWith(operator, flags, target.flags))
 */
export async function migrateWith(
  { backend, migrations }: StoreOperator,
  flags: Pick<Flags, 'dryRun' | 'baseline'>,
  where: string,
  announce?: Announce,
): Promise<MigrateReport> {
  if (migrations === undefined) throw new CliError(`${backend} has no schema to migrate`, 'drop migrate: the store needs no tables made for it')
  let from = await migrations.current()
  if (flags.dryRun) {
    const statements = from >= migrations.latest ? [] : migrations.script(from)
    return { target: where, from, to: migrations.latest, pending: pendingIn(statements), applied: [], dryRun: true, statements }
  }
  if (flags.baseline !== undefined) {
    checkBaseline(flags.baseline, migrations.latest)
    await migrations.baseline(flags.baseline)
  } else if (from === 0) await unrecorded(migrations, where)
  // Read again where the version may have moved: a baseline, or another instance migrating meanwhile.
  if (flags.baseline !== undefined || from === 0) from = await migrations.current()
  const pending = from >= migrations.latest ? [] : pendingIn(migrations.script(from))
  if (pending.length > 0) announce?.(from, pending, migrations.transactional !== false)
  const result = await migrations.migrate()
  return { target: where, from: result.from, to: result.to, pending, applied: result.applied, dryRun: false }
}

function checkBaseline(version: number, latest: number): void {
  if (version > latest) throw new CliError(`--baseline ${version} is newer than this idem's schema (version ${latest})`, `pass a version from 1 to ${latest}, or upgrade idem`)
}

// Tables without recorded versions would make the first migration fail on "already exists".
// Another instance may have migrated since the version was read: its tables and versions
// commit together, so a version read after the tables sees them, and this one goes on.
async function unrecorded(migrations: SchemaMigrations, where: string): Promise<void> {
  const tables = await migrations.unrecordedTables()
  if (tables.length === 0 || (await migrations.current()) > 0) return
  throw new CliError(
    `idem's tables exist (${tables.join(', ')}) but no schema version is recorded: they were created by hand, from SQL that did not record its version`,
    `find the version they are at (compare them with \`idem sql\`), then run: idem migrate ${where} --baseline <version>`,
  )
}
