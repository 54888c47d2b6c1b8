import { Argument, type Command } from 'commander'
import { postgresMigrationScript, SCHEMA_VERSION as POSTGRES_SCHEMA_VERSION } from '../stores/postgres/index.js'
import { SQLITE_SCHEMA_VERSION, sqliteMigrationScript } from '../stores/sqlite/index.js'
import { printJson, type CommandContext } from './context.js'
import { CliError } from './io.js'
import { count, identifier } from './parse.js'

/** What `idem sql` prints for one SQL backend, without a connection: each store's entry gives its version and script. */
interface MigrationSql {
  /** The backend, for messages. */
  name: string
  /** The version the script brings a database to. */
  latest: number
  /** Whether its tables live in a named schema (`--schema`). */
  schemas: boolean
  /** Every statement from version `from` to `latest`, in one transaction, recording each version. */
  script(from: number, schema: string): string[]
}

// The one table of backends here: the action below branches on what a backend has, never on its name.
const DIALECTS = {
  postgres: { name: 'Postgres', latest: POSTGRES_SCHEMA_VERSION, schemas: true, script: (from, schema) => postgresMigrationScript(schema, from) },
  sqlite: { name: 'SQLite', latest: SQLITE_SCHEMA_VERSION, schemas: false, script: (from) => sqliteMigrationScript(from) },
} satisfies Record<string, MigrationSql>

type Dialect = keyof typeof DIALECTS

export function registerSql(program: Command, { io }: CommandContext): void {
  program
    .command('sql')
    .summary("print the migration SQL, for DBAs who apply it themselves")
    .description(
      "Prints the SQL that creates or upgrades idem's tables, in one transaction, recording each version in idem_migrations exactly as `idem migrate` does, " +
        'so a later `idem migrate` (or store.migrate()) finds the schema current and applies only newer versions.',
    )
    .addArgument(new Argument('<dialect>', 'the database').choices(Object.keys(DIALECTS)))
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
    .action((dialect: Dialect, flags: { schema: string; from: number; json?: boolean }) => {
      const sql: MigrationSql = DIALECTS[dialect]
      const to = sql.latest
      if (flags.from > to) throw new CliError(`--from ${flags.from} is newer than this idem's schema (version ${to})`, `pass a version from 0 to ${to}, or upgrade idem`)
      if (!sql.schemas && flags.schema !== 'public') {
        const withSchemas = Object.values(DIALECTS).filter((d: MigrationSql) => d.schemas).map((d) => d.name)
        throw new CliError(`--schema is for ${withSchemas.join(' and ')} only`, `${sql.name} has no schemas: drop --schema`)
      }
      // Built whole before anything is printed: a failure prints nothing half-way.
      const statements = sql.script(flags.from, flags.schema)
      if (flags.json) return printJson(io, { dialect, ...(sql.schemas ? { schema: flags.schema } : {}), from: flags.from, to, statements })
      io.out(`-- idem schema ${sql.schemas ? `"${flags.schema}" ` : ''}from version ${flags.from} to ${to}`)
      for (const statement of statements) io.out(statement.startsWith('--') ? statement : `${statement};\n`)
    })
}
