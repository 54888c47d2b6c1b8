import { Argument, type Command } from 'commander'
import { postgresMigrationScript, SCHEMA_VERSION as POSTGRES_SCHEMA_VERSION } from '../stores/postgres/index.js'
import { SQLITE_SCHEMA_VERSION, sqliteMigrationScript } from '../stores/sqlite/index.js'
import { printJson, type CommandContext } from './context.js'
import { CliError } from './io.js'
import { count, identifier } from './parse.js'

export function registerSql(program: Command, { io }: CommandContext): void {
  program
    .command('sql')
    .summary("print the migration SQL, for DBAs who apply it themselves")
    .description(
      "Prints the SQL that creates or upgrades idem's tables, in one transaction, recording each version in idem_migrations exactly as `idem migrate` does, " +
        'so a later `idem migrate` (or store.migrate()) finds the schema current and applies only newer versions.',
    )
    .addArgument(new Argument('<dialect>', 'the database').choices(['postgres', 'sqlite']))
    .option('--schema <name>', 'Postgres schema to create the tables in', identifier, 'public')
    .option('--from <version>', 'the version the database is at now: print only the upgrade from there', count(0, 1_000), 0)
    .option('--json', 'print { dialect, from, to, statements } as JSON')
    .addHelpText(
      'after',
      `
Examples:
  $ idem sql postgres --schema idem > idem.sql && psql "$DATABASE_URL" -v ON_ERROR_STOP=1 -f idem.sql
  $ idem sql sqlite --from 3 | sqlite3 app.db`,
    )
    .action((dialect: 'postgres' | 'sqlite', flags: { schema: string; from: number; json?: boolean }) => {
      const to = dialect === 'postgres' ? POSTGRES_SCHEMA_VERSION : SQLITE_SCHEMA_VERSION
      if (flags.from > to) throw new CliError(`--from ${flags.from} is newer than this idem's schema (version ${to})`, `pass a version from 0 to ${to}, or upgrade idem`)
      if (dialect === 'sqlite' && flags.schema !== 'public') throw new CliError('--schema is for Postgres only', 'SQLite has no schemas: drop --schema')
      // Built whole before anything is printed: a failure prints nothing half-way.
      const statements = dialect === 'postgres' ? postgresMigrationScript(flags.schema, flags.from) : sqliteMigrationScript(flags.from)
      if (flags.json) return printJson(io, { dialect, ...(dialect === 'postgres' ? { schema: flags.schema } : {}), from: flags.from, to, statements })
      io.out(`-- idem schema ${dialect === 'postgres' ? `"${flags.schema}" ` : ''}from version ${flags.from} to ${to}`)
      for (const statement of statements) io.out(statement.startsWith('--') ? statement : `${statement};\n`)
    })
}
