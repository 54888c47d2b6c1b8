import type pg from 'pg'
import type { Claim, KeyStore } from '../../src/index.js'
import type { PgClient } from '../../src/stores/postgres/index.js'
import { migrationPreamble, migrations, versionRow } from '../../src/stores/postgres/dialect/migrations.js'
import { maintainDayPartitions } from '../../src/stores/postgres/day-partitions.js'

/** The schema version of the build before the key table's v-next (migration 7). */
export const PREVIOUS_VERSION = 6

/**
 * Brings `schema` to version 6 exactly as that build's `migrate()` did (with daily
 * partitions, the days ahead too): the schema an upgrade starts from.
 */
export async function migrateToPrevious(pool: pg.Pool, schema: string, layout: 'table' | 'daily-partitions'): Promise<void> {
  const client = await pool.connect()
  try {
    await client.query('BEGIN')
    for (const statement of migrationPreamble(schema)) await client.query(statement)
    for (const migration of migrations.filter((m) => m.version <= PREVIOUS_VERSION)) {
      for (const statement of [...migration.up(schema), versionRow(schema, migration)]) await client.query(statement)
    }
    await client.query('COMMIT')
  } finally {
    client.release()
  }
  if (layout === 'daily-partitions') await maintainDayPartitions(pool, schema, { daysAhead: 3, drop: false })
}

/**
 * The key store of version 6, as that build talked to Postgres: `idem_claim` (or
 * `idem_claim_by_day`) called in FROM for three columns, and the record's INSERT naming
 * `created_at`. An instance of the previous version during a rolling deploy.
 */
export function previousStore(pool: pg.Pool, schema: string, layout: 'table' | 'daily-partitions'): KeyStore<PgClient> {
  const s = `"${schema}"`
  const [claim, table] = layout === 'table' ? ['idem_claim', 'idem_keys'] : ['idem_claim_by_day', 'idem_keys_by_day']
  return {
    name: 'postgres (version 6)',
    maxOutcomeBytes: 16 * 1024 * 1024,
    async begin({ scope, key, waitMs }) {
      const client = await pool.connect()
      await client.query('BEGIN ISOLATION LEVEL READ COMMITTED')
      const { rows } = await client.query(`SELECT state, fingerprint, outcome FROM ${s}.${claim}($1, $2, $3)`, [scope, key, waitMs])
      const row = rows[0] as { state: 'new' | 'found' | 'locked' | 'stale'; fingerprint: string; outcome: string }
      const found: Claim = row.state === 'found' ? { state: 'found', record: { fingerprint: row.fingerprint, outcome: row.outcome } } : { state: row.state }
      return {
        tx: client,
        claim: found,
        joined: false,
        async commit(record) {
          try {
            await client.query(
              `INSERT INTO ${s}.${table} (scope, key, fingerprint, outcome, created_at, expires_at) VALUES ($1, $2, $3, $4, now(), now() + $5 * interval '1 millisecond')`,
              [scope, key, record.fingerprint, record.outcome, record.ttlMs],
            )
            await client.query('COMMIT')
          } catch (error) {
            await client.query('ROLLBACK')
            throw error
          } finally {
            client.release()
          }
        },
        async rollback() {
          await client.query('ROLLBACK')
          client.release()
        },
      }
    },
  }
}
