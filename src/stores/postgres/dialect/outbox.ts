import type { OutboxStatements } from '../../sql/dialect.js'
import { quoteSchema, type Statement } from './statement.js'

// ---- idem_outbox (migration 3) ----

/**
 * The outbox's statements on one schema for the protocol (src/stores/sql/outbox.ts):
 * each dispatcher operation is one statement over arrays of ids, its own short
 * transaction; Postgres keeps time itself (`now()`), so the protocol's `now` is unused.
 */
export function outboxStatements(schema: string): OutboxStatements {
  return {
    filtersTopics: true,
    insert: ({ topic, dedupeKey, payload, delayMs }) => outboxInsert(schema, topic, dedupeKey, payload, delayMs),
    claim: (claimId, limit, leaseMs, topics) => [outboxClaim(schema, limit, claimId, leaseMs, topics)],
    renew: (claimId, ids, leaseMs) => [outboxRenew(schema, ids, claimId, leaseMs)],
    delivered: (claimId, ids) => [outboxDelivered(schema, ids, claimId)],
    retry: (claimId, rows) => [outboxRetry(schema, rows.map((r) => r.id), rows.map((r) => r.delayMs), rows.map((r) => r.error), claimId)],
    deadLetter: (claimId, rows) => [outboxDeadLetter(schema, rows.map((r) => r.id), rows.map((r) => r.error), claimId)],
    pending: () => outboxPending(schema),
    prune: (olderThanMs, limit) => outboxPrune(schema, olderThanMs, limit),
  }
}

/**
 * Queues one effect in the caller's transaction. A second add of the same
 * `(topic, dedupe_key)` inserts nothing: one row back means it was queued now.
 */
export function outboxInsert(schema: string, topic: string, dedupeKey: string, payload: string, delayMs: number): Statement {
  return {
    text:
      `INSERT INTO ${quoteSchema(schema)}.idem_outbox (topic, dedupe_key, payload, next_attempt_at) ` +
      `VALUES ($1, $2, $3::jsonb, now() + $4 * interval '1 millisecond') ON CONFLICT (topic, dedupe_key) DO NOTHING RETURNING id`,
    values: [topic, dedupeKey, payload, delayMs],
  }
}

/**
 * Claims up to `limit` due rows in one short statement: SKIP LOCKED passes over rows
 * another dispatcher is claiming right now, and the lease (next_attempt_at and
 * locked_until pushed `leaseMs` ahead, locked_by naming this claim) keeps them from
 * being claimed again until it runs out. The attempt is counted at claim time, so a
 * dispatcher that dies mid-delivery still uses one up.
 */
export function outboxClaim(schema: string, limit: number, claimId: string, leaseMs: number, topics: readonly string[] | null): Statement {
  const s = quoteSchema(schema)
  return {
    text:
      `WITH due AS (SELECT id FROM ${s}.idem_outbox WHERE delivered_at IS NULL AND next_attempt_at <= now() ` +
      `AND ($4::text[] IS NULL OR topic = ANY($4::text[])) ` +
      `ORDER BY next_attempt_at LIMIT $1 FOR UPDATE SKIP LOCKED) ` +
      `UPDATE ${s}.idem_outbox AS o SET attempts = o.attempts + 1, locked_by = $2, ` +
      `locked_until = now() + $3 * interval '1 millisecond', next_attempt_at = now() + $3 * interval '1 millisecond' ` +
      `FROM due WHERE o.id = due.id ` +
      `RETURNING o.id::text AS id, o.topic, o.dedupe_key, o.payload::text AS payload, o.attempts, o.last_error, o.created_at`,
    values: [limit, claimId, leaseMs, topics],
  }
}

/**
 * Extends the lease of rows whose delivery is still running, only where this claim
 * still holds them (a compare-and-set on locked_by): a dispatcher keeps a row it is
 * still sending out of every other claim, and a dispatcher that stops renewing (it
 * died) lets the row come back when the lease runs out. next_attempt_at moves with
 * locked_until because due rows are found by next_attempt_at alone.
 * @returns the ids renewed (a missing one was taken over: its claim is lost)
 */
export function outboxRenew(schema: string, ids: readonly string[], claimId: string, leaseMs: number): Statement {
  return {
    text:
      `UPDATE ${quoteSchema(schema)}.idem_outbox SET locked_until = now() + $3 * interval '1 millisecond', ` +
      `next_attempt_at = now() + $3 * interval '1 millisecond' ` +
      `WHERE id = ANY($1::bigint[]) AND locked_by = $2 AND delivered_at IS NULL RETURNING id::text AS id`,
    values: [ids, claimId, leaseMs],
  }
}

/** Marks claimed rows delivered; only while this claim still holds them. */
export function outboxDelivered(schema: string, ids: readonly string[], claimId: string): Statement {
  return {
    text:
      `UPDATE ${quoteSchema(schema)}.idem_outbox SET delivered_at = now(), locked_until = NULL, locked_by = NULL, last_error = NULL ` +
      `WHERE id = ANY($1::bigint[]) AND locked_by = $2`,
    values: [ids, claimId],
  }
}

/** Schedules failed rows' next attempt (per-row delays) and releases the lease. */
export function outboxRetry(schema: string, ids: readonly string[], delaysMs: readonly number[], errors: readonly string[], claimId: string): Statement {
  return {
    text:
      `UPDATE ${quoteSchema(schema)}.idem_outbox AS o SET next_attempt_at = now() + f.delay_ms * interval '1 millisecond', ` +
      `last_error = f.error, locked_until = NULL, locked_by = NULL ` +
      `FROM unnest($1::bigint[], $2::integer[], $3::text[]) AS f(id, delay_ms, error) WHERE o.id = f.id AND o.locked_by = $4`,
    values: [ids, delaysMs, errors, claimId],
  }
}

/** Moves rows out of the outbox into idem_dead_letters with their last error, in one statement. */
export function outboxDeadLetter(schema: string, ids: readonly string[], errors: readonly string[], claimId: string): Statement {
  const s = quoteSchema(schema)
  return {
    text:
      `WITH moved AS (DELETE FROM ${s}.idem_outbox AS o USING unnest($1::bigint[], $2::text[]) AS f(id, error) ` +
      `WHERE o.id = f.id AND o.locked_by = $3 RETURNING o.topic, o.dedupe_key, o.payload, o.attempts, o.created_at, f.error) ` +
      `INSERT INTO ${s}.idem_dead_letters (source, name, message_key, payload, attempts, last_error, first_seen_at) ` +
      `SELECT 'outbox', topic, dedupe_key, payload, attempts, error, created_at FROM moved`,
    values: [ids, errors, claimId],
  }
}

/** Rows not yet delivered (due or not). */
export function outboxPending(schema: string): Statement {
  return { text: `SELECT count(*)::int AS n FROM ${quoteSchema(schema)}.idem_outbox WHERE delivered_at IS NULL`, values: [] }
}

/** Deletes rows delivered more than `olderThanMs` ago, at most `limit` at a time. */
export function outboxPrune(schema: string, olderThanMs: number, limit: number): Statement {
  const s = quoteSchema(schema)
  return {
    text:
      `DELETE FROM ${s}.idem_outbox WHERE ctid = ANY (ARRAY(SELECT ctid FROM ${s}.idem_outbox ` +
      `WHERE delivered_at < now() - $1 * interval '1 millisecond' LIMIT $2 FOR UPDATE SKIP LOCKED))`,
    values: [olderThanMs, limit],
  }
}

