import { CliError } from '../../core/errors/cli-error.js'
import { masked } from '../../core/errors/credentials.js'
import type { StoreEntry, StoreTarget } from '../../ports/store-entry.js'
import type { StoreOperator } from '../../ports/operator.js'
import { checkedUrl, connectionError, loadPeer, shellWord, tablesMissingError } from '../cli-kit.js'
import { MYSQL_SCHEMA_VERSION, mysqlMigrationScript } from './dialect/migrations.js'

/** MySQL and MariaDB as the `idem` command reaches them: `--mysql <url>`. */
export const entry: StoreEntry = {
  name: 'mysql',
  title: 'MySQL',
  exports: { subpath: './mysql', module: './dist/stores/mysql/index.js' },
  peer: 'mysql2',
  cli: {
    value: '<url>',
    help: "MySQL or MariaDB URL (mysql://user[:password]@host[:port]/database): the database holding idem's tables",
    commands: ['migrate', 'prune', 'inspect', 'stats', 'uninstall'],
    target: mysqlTarget,
    tablesMissing: (error) => error instanceof Error && /Table '[^']*\.idem_\w+' doesn't exist/.test(error.message),
    // Its routines hold `;`: the mysql client reads the script under DELIMITER $$.
    sql: { latest: MYSQL_SCHEMA_VERSION, schemas: false, atomic: false, delimiter: '$$', script: (from) => mysqlMigrationScript(from) },
  },
}

function mysqlTarget(given: string): StoreTarget {
  const url = checkedUrl({ flag: 'mysql', name: 'MySQL', protocols: ['mysql:'], example: 'mysql://user@127.0.0.1:3306/app' }, given)
  if (new URL(url).pathname.replace(/^\//, '') === '') {
    throw new CliError(`--mysql ${JSON.stringify(masked(given))} names no database`, "pass the database holding idem's tables, such as mysql://user@127.0.0.1:3306/app")
  }
  const flags = `--mysql ${shellWord(masked(url))}`
  return {
    flags,
    secrets: [url],
    missing: (cause) => tablesMissingError(masked(url), flags, cause),
    withOperator: (_access, work) => withMysql(url, work),
  }
}

// mysql2, and the store's operator with it, are loaded only when a command runs.
const loadMysql = () =>
  loadPeer('mysql2', 'MySQL', async () => ({
    createPool: (await import('mysql2/promise')).createPool,
    mysqlOperator: (await import('./operator.js')).mysqlOperator,
  }))

/** Opens a small pool on the database, runs `work` with its operator, and ends the pool. */
async function withMysql<T>(url: string, work: (operator: StoreOperator) => Promise<T>): Promise<T> {
  const { createPool, mysqlOperator } = await loadMysql()
  const pool = createPool({ uri: url, connectionLimit: 2, connectTimeout: 10_000, charset: 'utf8mb4' })
  try {
    await pool.query('SELECT 1').catch((error: unknown) => {
      throw connectionError('MySQL', url, error)
    })
    return await work(mysqlOperator({ pool }))
  } finally {
    await pool.end()
  }
}
