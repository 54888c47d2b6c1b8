import { randomBytes } from 'node:crypto'
import pg from 'pg'

/** The Postgres the tests use (override with IDEM_TEST_PG_URL). */
export const PG_URL = process.env.IDEM_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test'

export interface TestSchema {
  pool: pg.Pool
  schema: string
  /** Drops the schema and ends the pool. */
  drop(): Promise<void>
}

/**
 * A schema of its own for one test file, so parallel files and reruns never collide.
 * Returns undefined when Postgres is unreachable outside CI (the file then skips, and
 * says so); in CI an unreachable Postgres fails the run.
 */
export async function testSchema(prefix: string, poolSize = 10): Promise<TestSchema | undefined> {
  const schema = `${prefix}_${randomBytes(4).toString('hex')}`
  const pool = new pg.Pool({ connectionString: PG_URL, max: poolSize, connectionTimeoutMillis: 10_000 })
  // A test that cuts connections leaves idle clients to fail; their next use reports it.
  pool.on('error', () => {})
  try {
    await pool.query(`CREATE SCHEMA "${schema}"`)
  } catch (error) {
    await pool.end()
    if (process.env.CI) throw new Error(`Postgres at ${PG_URL} is required in CI: ${(error as Error).message}`)
    console.warn(`SKIPPED: Postgres at ${PG_URL} is unreachable (${(error as Error).message})`)
    return undefined
  }
  return {
    pool,
    schema,
    async drop() {
      await pool.query(`DROP SCHEMA "${schema}" CASCADE`)
      await pool.end()
    },
  }
}
