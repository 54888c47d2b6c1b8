import { randomBytes } from 'node:crypto'
import mysql from 'mysql2/promise'

/** The MySQL / MariaDB server the tests use (override with IDEM_TEST_MYSQL_URL). */
export const MYSQL_URL = process.env.IDEM_TEST_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test'

export interface TestDatabase {
  /** A pool on the file's own database. */
  pool: mysql.Pool
  database: string
  /** A URL of the file's own database (for child processes and the CLI). */
  url: string
  /** Drops the database and ends the pool. */
  drop(): Promise<void>
}

/** A pool on `database` of the test server (or on its default database). */
export function testPool(database?: string, connectionLimit = 10): mysql.Pool {
  return mysql.createPool({ uri: urlOf(database), connectionLimit, charset: 'utf8mb4', connectTimeout: 10_000 })
}

function urlOf(database: string | undefined): string {
  if (database === undefined) return MYSQL_URL
  const url = new URL(MYSQL_URL)
  url.pathname = `/${database}`
  return url.toString()
}

/**
 * A database of its own for one test file, so parallel files and reruns never collide.
 * Returns undefined when the server is unreachable outside CI (the file then skips, and
 * says so); in CI an unreachable server fails the run.
 */
export async function testDatabase(prefix: string, connectionLimit = 10): Promise<TestDatabase | undefined> {
  const database = `${prefix}_${randomBytes(4).toString('hex')}`
  const admin = testPool(undefined, 1)
  try {
    await admin.query(`CREATE DATABASE \`${database}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci`)
  } catch (error) {
    await admin.end()
    if (process.env.CI) throw new Error(`MySQL at ${MYSQL_URL} is required in CI: ${(error as Error).message}`)
    console.warn(`SKIPPED: MySQL at ${MYSQL_URL} is unreachable (${(error as Error).message})`)
    return undefined
  }
  await admin.end()
  const pool = testPool(database, connectionLimit)
  return {
    pool,
    database,
    url: urlOf(database),
    async drop() {
      await pool.query(`DROP DATABASE \`${database}\``)
      await pool.end()
    },
  }
}
