import { createRequire } from 'node:module'
import type pg from 'pg'
import { masked } from '../../core/errors/credentials.js'
import type { StoreEntry, StoreFlags, StoreTarget } from '../../ports/store-entry.js'
import { connectionError, loadPeer, shellWord, sqlIdentifier, tablesMissingError } from '../cli-kit.js'
import { pgConnection, postgresConnection, type PgParse, type PostgresConnection } from './cli-connection.js'
import { SCHEMA_VERSION } from './dialect/migrations.js'
import { postgresMigrationScript } from './migrate.js'

/** Postgres as the `idem` command reaches it: `--postgres <url>` (or libpq's keyword=value pairs), `--schema`, and `--key-layout` for migrate and prune. */
export const entry: StoreEntry = {
  name: 'postgres',
  title: 'Postgres',
  exports: { subpath: './postgres', module: './dist/stores/postgres/index.js' },
  peer: 'pg',
  cli: {
    value: '<url>',
    help: "Postgres URL (postgres://user[:password]@host[:port]/database), or libpq's keyword=value pairs in one argument ('host=… port=… user=… dbname=…')",
    options: [
      { flags: '--schema <name>', help: "Postgres schema holding idem's tables", parse: sqlIdentifier, default: 'public' },
      {
        flags: '--key-layout <layout>',
        help: "Postgres only: the key table's layout; daily-partitions makes prune drop past days and create days ahead",
        choices: ['table', 'daily-partitions'],
        commands: ['migrate', 'prune'],
      },
    ],
    commands: ['migrate', 'prune', 'inspect', 'stats', 'uninstall', 'reconcile'],
    target: postgresTarget,
    tablesMissing: (error) => error instanceof Error && /relation "[^"]*idem_\w+" does not exist/.test(error.message),
    sql: { latest: SCHEMA_VERSION, schemas: true, atomic: true, script: (from, schema) => postgresMigrationScript(schema, from) },
  },
}

function postgresTarget(given: string, flags: StoreFlags): StoreTarget {
  const connection = postgresConnection(given)
  const schema = typeof flags.schema === 'string' ? flags.schema : 'public'
  const keyLayout = flags.keyLayout === 'table' || flags.keyLayout === 'daily-partitions' ? flags.keyLayout : undefined
  const named = `--postgres ${shellWord(masked(given))}${schema === 'public' ? '' : ` --schema ${schema}`}`
  return {
    flags: named,
    secrets: [given],
    missing: (cause) => tablesMissingError(`schema "${schema}"`, named, cause),
    withOperator: (_access, work) => withPostgres(given, connection, (pool, postgresOperator) => work(postgresOperator({ pool, schema, ...(keyLayout === undefined ? {} : { keyLayout }) }))),
  }
}

// pg, and the store's operator with it, are loaded only when a command runs.
const loadPg = () =>
  loadPeer('pg', 'Postgres', async () => {
    const { Pool } = (await import('pg')).default
    const { parse }: { parse: PgParse } = createRequire(import.meta.resolve('pg'))('pg-connection-string')
    return { Pool, parse, postgresOperator: (await import('./operator.js')).postgresOperator }
  })

type Operate = typeof import('./operator.js').postgresOperator

/** Opens a small pool on the target, runs `work`, and ends the pool. */
async function withPostgres<T>(given: string, connection: PostgresConnection, work: (pool: pg.Pool, operator: Operate) => Promise<T>): Promise<T> {
  const { Pool, parse, postgresOperator } = await loadPg()
  let pool: pg.Pool | undefined
  try {
    pool = new Pool({ ...pgConnection(connection, parse), max: 2, connectionTimeoutMillis: 10_000 })
    // An idle client's connection dying must not end the command with an unhandled 'error'.
    pool.on('error', () => {})
    // pg parses a URL here, and throws at once where it cannot (an sslkey file that is not there).
    await pool.query('SELECT 1')
  } catch (error) {
    await pool?.end()
    throw connectionError('Postgres', given, error)
  }
  try {
    return await work(pool, postgresOperator)
  } finally {
    await pool.end()
  }
}
