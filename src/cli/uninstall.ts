import type { Command } from 'commander'
import { printJson, type CommandContext } from './context.js'
import { CliError } from '../core/errors/cli-error.js'
import { storeError, targetOf, withTargetOptions } from './target.js'

interface Flags {
  dryRun?: boolean
  yes?: boolean
  json?: boolean
}

/** What `idem uninstall` did, or (with --dry-run) would do. */
interface UninstallReport {
  target: string
  dryRun: boolean
  /** What was (or would be) run, one line each: a SQL statement, or the DynamoDB request. */
  removed: string[]
}

export function registerUninstall(program: Command, { io }: CommandContext): void {
  const command = program
    .command('uninstall')
    .summary("remove idem's tables and functions, and everything in them")
    .description(
      "Removes everything idem made in the store: on Postgres and SQLite its tables (idem_…, with their indexes and partitions) and functions, " +
        'in one transaction; on MySQL its tables and routines (each DROP commits as it runs there); on DynamoDB its table. Every stored key, inbox id, outbox row and dead letter goes with them, so it asks for --yes; ' +
        '--dry-run prints what it would remove and removes nothing. Your own tables are never touched.',
    )
  withTargetOptions(command, 'uninstall')
    .option('--dry-run', 'print what would be removed, and remove nothing')
    .option('--yes', 'remove them (required unless --dry-run)')
    .option('--json', 'print { target, dryRun, removed } as JSON')
    .addHelpText(
      'after',
      `
Examples:
  $ idem uninstall --postgres postgres://app@db.internal:5432/app --schema idem --dry-run
  $ idem uninstall --sqlite data/app.db --yes
  $ idem uninstall --dynamodb idem --yes`,
    )
    .action(async (flags: Flags, self: Command) => {
      const target = targetOf(self, 'uninstall')
      const where = target.flags
      if (!flags.dryRun && !flags.yes) {
        throw new CliError("uninstall deletes idem's tables and every record in them", `review what goes with: idem uninstall ${where} --dry-run; then run it with --yes`)
      }
      const access = { create: false, dryRun: flags.dryRun === true }
      let transactional = true
      const removed = await target.withOperator(access, async (operator) => {
        if (operator.uninstall === undefined) throw new CliError(`${operator.backend} keeps nothing of idem's that outlives its keys`, 'nothing to uninstall')
        transactional = operator.migrations?.transactional !== false
        return flags.dryRun ? operator.uninstall.plan() : operator.uninstall.run()
      }).catch((error: unknown) => {
        throw storeError(error, target)
      })
      const report: UninstallReport = { target: where, dryRun: flags.dryRun === true, removed }
      if (flags.json) return printJson(io, report)
      if (removed.length === 0) return io.out(`idem: nothing of idem's in ${where}`)
      if (flags.dryRun) {
        const how = transactional ? 'in one transaction' : 'each statement on its own (DDL commits as it runs here)'
        io.out(`-- idem uninstall ${where} would run, ${how}; nothing was removed`)
        for (const line of removed) io.out(`${line};`)
        return
      }
      io.out(`idem: removed ${removed.length} of idem's objects:`)
      for (const line of removed) io.out(`  ${line}`)
    })
}
