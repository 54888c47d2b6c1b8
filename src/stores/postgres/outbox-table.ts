import type { OutboxTable } from '../../ports/outbox-table.js'
import { claimedOutboxRow, type OutboxRowColumns } from '../outbox-rows.js'
import { classifyPgError } from './driver/errors.js'
import { assertExecutor } from './driver/executors.js'
import { queryOnPool } from './driver/pool-query.js'
import * as sql from './dialect/index.js'
import type { PgExecutor, PgPool } from './driver/types.js'

/**
 * The outbox's table on Postgres (`idem_outbox`): `add` in the caller's transaction;
 * every dispatcher statement on a pooled client of its own, each its own short
 * transaction (claims with `FOR UPDATE SKIP LOCKED`).
 */
export function postgresOutboxTable(pool: PgPool, schema: string): OutboxTable<PgExecutor> {
  const run = (statement: sql.Statement) => queryOnPool(pool, schema, statement)
  return {
    filtersTopics: true,
    async add(tx, { topic, dedupeKey, payload, delayMs }) {
      assertExecutor('outbox.add: "tx"', tx)
      const statement = sql.outboxInsert(schema, topic, dedupeKey, payload, delayMs)
      try {
        return ((await tx.query(statement.text, statement.values)).rowCount ?? 0) === 1
      } catch (error) {
        throw classifyPgError(error, schema)
      }
    },
    async claim(claimId, limit, leaseMs, topics) {
      return (await run(sql.outboxClaim(schema, limit, claimId, leaseMs, topics))).rows.map((row) => claimedOutboxRow(row as OutboxRowColumns))
    },
    async renew(claimId, ids, leaseMs) {
      return new Set(((await run(sql.outboxRenew(schema, ids, claimId, leaseMs))).rows as { id: string }[]).map((row) => row.id))
    },
    async delivered(claimId, ids) {
      await run(sql.outboxDelivered(schema, ids, claimId))
    },
    async retry(claimId, rows) {
      await run(sql.outboxRetry(schema, rows.map((r) => r.id), rows.map((r) => r.delayMs), rows.map((r) => r.error), claimId))
    },
    async deadLetter(claimId, rows) {
      await run(sql.outboxDeadLetter(schema, rows.map((r) => r.id), rows.map((r) => r.error), claimId))
    },
    async pending() {
      return ((await run(sql.outboxPending(schema))).rows[0] as { n: number }).n
    },
  }
}
