import { Argument, type Command } from 'commander'
import { CliError } from '../core/errors/cli-error.js'
import type { StoreSql } from '../ports/store-entry.js'
import { printJson, type CommandContext } from './context.js'
import { count, identifier } from './parse.js'
import { CLI_STORES } from './target.js'

// Each SQL store's entry gives its version and script: the action branches on what a store has, never on its name.
const DIALECTS = new Map(CLI_STORES.flatMap((store) => (store.cli.sql === undefined ? [] : [[store.name, { title: store.title, ...store.cli.sql }] as const])))

type Dialect = StoreSql & { title: string }

export function registerSql(program: Command, { io }: CommandContext): void {
  const withSchemas = [...DIALECTS.values()].filter((d) => d.schemas).map((d) => d.title)
  program
    .command('sql')
    .summary("print the migration SQL, for DBAs who apply it themselves")
    .description(
      "Prints the SQL that creates or upgrades idem's tables, recording each version in idem_migrations exactly as `idem migrate` does, " +
        'so a later `idem migrate` (or store.migrate()) finds the schema current and applies only newer versions. ' +
        'On Postgres and SQLite the script is one transaction; MySQL commits each DDL statement as it runs it, so its script holds a named lock instead, and one that stopped half-way is finished by running it again.',
    )
    .addArgument(new Argument('<dialect>', 'the database').choices([...DIALECTS.keys()]))
    .option('--schema <name>', `schema to create the tables in (${withSchemas.join(', ')})`, identifier, 'public')
    .option('--from <version>', 'the version the database is at now: print only the upgrade from there', count(0, 1_000), 0)
    .option('--json', 'print { dialect, from, to, statements } as JSON')
    .addHelpText(
      'after',
      `
Examples:
  $ idem sql postgres --schema idem > idem.sql && psql "$DATABASE_URL" -v ON_ERROR_STOP=1 -f idem.sql
  $ idem sql sqlite --from 3 | sqlite3 app.db
  $ idem sql mysql | mysql -h 127.0.0.1 -u app app`,
    )
    .action((dialect: string, flags: { schema: string; from: number; json?: boolean }) => {
      const sql: Dialect = DIALECTS.get(dialect)!
      const to = sql.latest
      if (flags.from > to) throw new CliError(`--from ${flags.from} is newer than this idem's schema (version ${to})`, `pass a version from 0 to ${to}, or upgrade idem`)
      if (!sql.schemas && flags.schema !== 'public') throw new CliError(`--schema is for ${withSchemas.join(' and ')} only`, `${sql.title} has no schemas: drop --schema`)
      // Built whole before anything is printed: a failure prints nothing half-way.
      const statements = sql.script(flags.from, flags.schema)
      if (flags.json) return printJson(io, { dialect, ...(sql.schemas ? { schema: flags.schema } : {}), from: flags.from, to, statements })
      printScript(io, sql, `-- idem schema ${sql.schemas ? `"${flags.schema}" ` : ''}from version ${flags.from} to ${to}`, statements)
    })
}

/** The script as the database's command-line client reads it: under its `DELIMITER` where a statement holds `;`. */
function printScript(io: CommandContext['io'], sql: Dialect, heading: string, statements: readonly string[]): void {
  io.out(heading)
  if (!sql.atomic) io.out(`-- ${sql.title} commits each DDL statement as it runs it: this is no transaction; if it stops half-way, run it again.`)
  const end = sql.delimiter ?? ';'
  if (end !== ';') io.out(`DELIMITER ${end}`)
  for (const statement of statements) io.out(statement.startsWith('--') ? statement : `${statement}${end}\n`)
  if (end !== ';') io.out('DELIMITER ;')
}
