/**
 * Every SQL statement the Postgres store runs, as pure functions of the schema name.
 * DBAs can read exactly what runs here (and `idem sql postgres` prints it).
 */

import { createHash } from 'node:crypto'

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/

/** Validates and quotes a schema name. */
export function quoteSchema(schema: string): string {
  if (!IDENTIFIER.test(schema)) {
    throw new TypeError(`schema must be a plain SQL identifier (letters, digits, _), got ${JSON.stringify(schema)}`)
  }
  return `"${schema}"`
}

export interface Statement {
  text: string
  values: unknown[]
}

/**
 * Takes the key's transaction-scoped advisory lock (waiting up to `waitMs`), then reads
 * the live record, in one round trip. The function is VOLATILE so, under READ
 * COMMITTED, its SELECT takes a new snapshot after the lock wait and sees the
 * holder's commit.
 */
export function claim(schema: string, scope: string, key: string, waitMs: number): Statement {
  return {
    text: `SELECT state, fingerprint, outcome FROM ${quoteSchema(schema)}.idem_claim($1, $2, $3)`,
    values: [scope, key, waitMs],
  }
}

/**
 * Writes the record. The caller holds the key's lock, and the claim removed an expired
 * record under it, so a plain INSERT suffices; a row written by anything else meanwhile
 * is a unique violation that rolls the whole transaction back.
 */
export function save(schema: string, scope: string, key: string, fingerprint: string, outcome: string, ttlMs: number): Statement {
  return {
    text:
      `INSERT INTO ${quoteSchema(schema)}.idem_keys (scope, key, fingerprint, outcome, created_at, expires_at) ` +
      `VALUES ($1, $2, $3, $4, now(), now() + $5 * interval '1 millisecond')`,
    values: [scope, key, fingerprint, outcome, ttlMs],
  }
}

/**
 * Reads a key's live record without a transaction or a lock. A committed record is
 * final until it expires, so this alone can answer a retry; finding none says nothing
 * (the key may be held right now), and the call then claims the key as usual.
 */
export function lookup(schema: string, scope: string, key: string): Statement {
  return {
    text: `SELECT fingerprint, outcome FROM ${quoteSchema(schema)}.idem_keys WHERE scope = $1 AND key = $2 AND expires_at > now()`,
    values: [scope, key],
  }
}

/**
 * Claims a new key and writes its record in one statement, for calls that store no
 * outcome (the record is known before the call runs). It takes the key's advisory lock
 * only if it is free (the lock `idem_claim` takes, so the two paths exclude each other)
 * and, holding it, inserts the record; the INSERT therefore never waits on another
 * writer of the row. One row inserted (the command's row count; no RETURNING, whose row
 * costs both sides measurably): claimed. None: the lock was held, or a record exists
 * (live or expired); `idem_claim` then decides, as for any call.
 */
export function mark(schema: string, scope: string, key: string, fingerprint: string, ttlMs: number): Statement {
  return {
    text:
      `INSERT INTO ${quoteSchema(schema)}.idem_keys (scope, key, fingerprint, outcome, created_at, expires_at) ` +
      `SELECT $1, $2, $3, 'null', now(), now() + $4 * interval '1 millisecond' ` +
      `WHERE pg_try_advisory_xact_lock(hashtextextended(length($1)::text || ':' || $1 || $2, 0)) ` +
      `ON CONFLICT DO NOTHING`,
    values: [scope, key, fingerprint, ttlMs],
  }
}

/**
 * A statement the store prepares once per connection (SQL `PREPARE`) and then runs with
 * `EXECUTE`, so Postgres parses, analyses and plans it once per connection instead of
 * once per call (measured: about a tenth of a queue message's cost). `EXECUTE` still
 * travels in the simple protocol, so it keeps sharing a round trip with BEGIN or COMMIT.
 */
export interface PreparedStatement {
  /** Derived from a hash of `prepare`, so another schema or another idem version never collides with it. */
  name: string
  /** The `PREPARE` statement. */
  prepare: string
  /** `EXECUTE name($1, …)`, built once: it is sent on every call. */
  execute: string
}

function prepared(kind: string, types: readonly string[], text: string): PreparedStatement {
  const body = `(${types.join(', ')}) AS ${text}`
  const name = `idem_${kind}_${createHash('sha256').update(body).digest('hex').slice(0, 16)}`
  return { name, prepare: `PREPARE ${name}${body}`, execute: `EXECUTE ${name}(${types.map((_, i) => `$${i + 1}`).join(', ')})` }
}

/**
 * A table the transactional store keeps keys in, as the statements it runs on it:
 * `idem_keys` (every call: fingerprint and outcome) or `idem_inbox` (the inbox's
 * message ids: only that a message was processed, until when). Each statement has the
 * same parameters in its plain and prepared forms, so the store can run either.
 */
export interface KeyTable {
  /** False for a table that records only that a key ran: calls on it store no outcome. */
  readonly keepsOutcomes: boolean
  claim(scope: string, key: string, waitMs: number): Statement
  mark(scope: string, key: string, fingerprint: string, ttlMs: number): Statement
  lookup(scope: string, key: string): Statement
  save(scope: string, key: string, fingerprint: string, outcome: string, ttlMs: number): Statement
  readonly prepared: { claim: PreparedStatement; mark: PreparedStatement; lookup: PreparedStatement; save: PreparedStatement }
}

/** `idem_keys`: the statements above. */
export function keysTable(schema: string): KeyTable {
  return {
    keepsOutcomes: true,
    claim: (scope, key, waitMs) => claim(schema, scope, key, waitMs),
    mark: (scope, key, fingerprint, ttlMs) => mark(schema, scope, key, fingerprint, ttlMs),
    lookup: (scope, key) => lookup(schema, scope, key),
    save: (scope, key, fingerprint, outcome, ttlMs) => save(schema, scope, key, fingerprint, outcome, ttlMs),
    prepared: { claim: claimPrepared(schema), mark: markPrepared(schema), lookup: lookupPrepared(schema), save: savePrepared(schema) },
  }
}

/**
 * `idem_inbox`: one narrow row per processed message, `(consumer, message_key,
 * expires_at)`. The scope is the consumer's name. Its claims take an advisory lock of
 * their own (see `inboxLockId`) the way `idem_claim` does, so a duplicate delivery waits
 * for the one in flight at most `waitMs`. The fingerprint and outcome of a call are not
 * kept: any redelivery of an id is the same message.
 */
export function inboxTable(schema: string): KeyTable {
  const s = quoteSchema(schema)
  const claim = (consumer: string, key: string, waitMs: number): Statement => ({
    text: `SELECT ${s}.idem_inbox_claim($1, $2, $3) AS state`,
    values: [consumer, key, waitMs],
  })
  const mark = (consumer: string, key: string, _fingerprint: string, ttlMs: number): Statement => ({
    text:
      `INSERT INTO ${s}.idem_inbox (consumer, message_key, expires_at) ` +
      `SELECT $1, $2, now() + $3 * interval '1 millisecond' WHERE pg_try_advisory_xact_lock(${inboxLockId('$1', '$2')}) ` +
      `ON CONFLICT DO NOTHING`,
    values: [consumer, key, ttlMs],
  })
  const lookup = (consumer: string, key: string): Statement => ({
    text: `SELECT 'found' AS state FROM ${s}.idem_inbox WHERE consumer = $1 AND message_key = $2 AND expires_at > now()`,
    values: [consumer, key],
  })
  const save = (consumer: string, key: string, _fingerprint: string, _outcome: string, ttlMs: number): Statement => ({
    text: `INSERT INTO ${s}.idem_inbox (consumer, message_key, expires_at) VALUES ($1, $2, now() + $3 * interval '1 millisecond')`,
    values: [consumer, key, ttlMs],
  })
  return {
    keepsOutcomes: false,
    claim,
    mark,
    lookup,
    save,
    prepared: {
      claim: prepared('inbox_claim', ['text', 'text', 'integer'], claim('', '', 0).text),
      mark: prepared('inbox_mark', ['text', 'text', 'bigint'], mark('', '', '', 0).text),
      lookup: prepared('inbox_lookup', ['text', 'text'], lookup('', '').text),
      save: prepared('inbox_save', ['text', 'text', 'bigint'], save('', '', '', '', 0).text),
    },
  }
}

/**
 * The advisory lock of an inbox id, over SQL expressions for the consumer and the key.
 * Length-prefixed like `idem_claim`'s, and in a namespace of its own so an inbox id
 * never shares a lock with an `idem_keys` key (a hash collision only makes two wait).
 */
export function inboxLockId(consumer: string, key: string): string {
  return `hashtextextended('inbox/' || length(${consumer})::text || ':' || ${consumer} || ${key}, 0)`
}

/** `claim`, prepared. */
export function claimPrepared(schema: string): PreparedStatement {
  return prepared('claim', ['text', 'text', 'integer'], claim(schema, '', '', 0).text)
}

/** `mark`, prepared. */
export function markPrepared(schema: string): PreparedStatement {
  return prepared('mark', ['text', 'text', 'text', 'bigint'], mark(schema, '', '', '', 0).text)
}

/** `lookup`, prepared. */
export function lookupPrepared(schema: string): PreparedStatement {
  return prepared('lookup', ['text', 'text'], lookup(schema, '', '').text)
}

/** `save`, prepared. */
export function savePrepared(schema: string): PreparedStatement {
  return prepared('save', ['text', 'text', 'text', 'text', 'bigint'], save(schema, '', '', '', '', 0).text)
}

/** Runs a prepared statement with these values. */
export function execute(statement: PreparedStatement, values: unknown[]): Statement {
  return { text: statement.execute, values }
}

/** Which of these statements the connection has prepared (read when its own bookkeeping proved wrong). */
export function preparedNames(names: readonly string[]): Statement {
  const list = names.map((_, i) => `$${i + 1}`).join(', ')
  return { text: `SELECT name FROM pg_prepared_statements WHERE name IN (${list})`, values: [...names] }
}

/** READ COMMITTED is what lets a waiter see the first call's commit (see `claim`). */
export type Isolation = 'read committed' | 'repeatable read' | 'serializable'

export function begin(isolation: Isolation): string {
  return `BEGIN ISOLATION LEVEL ${isolation.toUpperCase()}`
}

/**
 * Inlines a statement's values as literals so it can share one simple-protocol round
 * trip with BEGIN or COMMIT. Values are escaped by the driver's own `escapeLiteral`.
 */
export function inline(statement: Statement, escapeLiteral: (value: string) => string): string {
  const parts = templateOf(statement.text)
  let text = parts[0] as string
  for (let i = 1; i < parts.length; i += 2) {
    const value = statement.values[parts[i] as number]
    if (typeof value === 'number') {
      if (!Number.isSafeInteger(value)) throw new TypeError(`cannot inline the number ${value}`)
      text += String(value)
    } else {
      text += escapeLiteral(String(value))
    }
    text += parts[i + 1] as string
  }
  return text
}

// The store inlines a handful of texts (its statements, per schema) on every call:
// each is split at its placeholders once (a regular-expression replace per call cost
// more than the rest of building the round trip).
const templates = new Map<string, (string | number)[]>()

/** A text split at its `$n` placeholders: text, value index, text, …, text. */
function templateOf(text: string): (string | number)[] {
  let parts = templates.get(text)
  if (parts === undefined) {
    parts = text.split(/\$(\d+)/).map((part, i) => (i % 2 === 1 ? Number(part) - 1 : part))
    if (templates.size >= 1_000) templates.clear()
    templates.set(text, parts)
  }
  return parts
}

/** The tables whose rows expire. */
export type ExpiringTable = 'idem_keys' | 'idem_inbox' | 'idem_leases'

/**
 * Removes expired rows of one of idem's tables (`idem_keys`, `idem_inbox`, or
 * `idem_leases` whose steps go by cascade), at most `limit` at a time; rows locked by
 * a running call are skipped.
 */
export function prune(schema: string, limit: number, table: ExpiringTable): Statement {
  const s = quoteSchema(schema)
  return {
    text:
      `DELETE FROM ${s}.${table} WHERE ctid = ANY (ARRAY(` +
      `SELECT ctid FROM ${s}.${table} WHERE expires_at <= now() LIMIT $1 FOR UPDATE SKIP LOCKED))`,
    values: [limit],
  }
}

/**
 * Records `(kind, subject)` unless it is already there: one row affected means this is
 * the first time. Run in the caller's transaction, so a rollback forgets it; a
 * concurrent transaction inserting the same pair waits for this one to end.
 */
export function onceInsert(schema: string, kind: string, subject: string): Statement {
  return {
    text: `INSERT INTO ${quoteSchema(schema)}.idem_once (kind, subject) VALUES ($1, $2) ON CONFLICT (kind, subject) DO NOTHING`,
    values: [kind, subject],
  }
}

// ---- idem/queue (migration 3): outbox, dead letters, inbox attempts ----

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

/** Counts one failed attempt of an inbox message. @returns the row's `attempts` */
export function inboxAttemptRecord(schema: string, consumer: string, messageKey: string, error: string): Statement {
  const s = quoteSchema(schema)
  return {
    text:
      `INSERT INTO ${s}.idem_inbox_attempts AS a (consumer, message_key, attempts, last_error) VALUES ($1, $2, 1, $3) ` +
      `ON CONFLICT (consumer, message_key) DO UPDATE SET attempts = a.attempts + 1, last_error = excluded.last_error, last_failed_at = now() ` +
      `RETURNING attempts`,
    values: [consumer, messageKey, error],
  }
}

/**
 * Reads and removes a message's failure count in one statement, inside the
 * transaction that processes it: a success commits the removal, a failure rolls it
 * back.
 */
export function inboxAttemptTake(schema: string, consumer: string, messageKey: string): Statement {
  return {
    text:
      `DELETE FROM ${quoteSchema(schema)}.idem_inbox_attempts WHERE consumer = $1 AND message_key = $2 ` +
      `RETURNING attempts, last_error, first_failed_at`,
    values: [consumer, messageKey],
  }
}

/** Records a dead letter (inbox messages; the outbox moves its rows with `outboxDeadLetter`). */
export function deadLetterInsert(
  schema: string,
  source: 'inbox' | 'outbox',
  name: string,
  messageKey: string,
  payload: string | null,
  attempts: number,
  lastError: string,
  firstSeenAt: Date | null,
): Statement {
  return {
    text:
      `INSERT INTO ${quoteSchema(schema)}.idem_dead_letters (source, name, message_key, payload, attempts, last_error, first_seen_at) ` +
      `VALUES ($1, $2, $3, $4::jsonb, $5, $6, coalesce($7::timestamptz, now()))`,
    values: [source, name, messageKey, payload, attempts, lastError, firstSeenAt],
  }
}

/** Dead letters of one source and name, newest first. */
export function deadLetterList(schema: string, source: 'inbox' | 'outbox', name: string | null, limit: number): Statement {
  return {
    text:
      `SELECT id::text AS id, source, name, message_key, payload::text AS payload, attempts, last_error, first_seen_at, dead_at ` +
      `FROM ${quoteSchema(schema)}.idem_dead_letters WHERE source = $1 AND ($2::text IS NULL OR name = $2) ORDER BY dead_at DESC, id DESC LIMIT $3`,
    values: [source, name, limit],
  }
}

// ---- leased mode (migration 4): idem_leases, idem_steps ----
// Every statement runs on its own (autocommit), so each is its own transaction. The
// writes after a claim are compare-and-set on (state 'held', token): a stale token
// matches no row and changes nothing. Tokens travel as text (bigint).

/** Claims a key in one round trip (see `idem_lease_claim` in migration 4). */
export function leaseClaim(schema: string, scope: string, key: string, fingerprint: string, leaseMs: number, ttlMs: number): Statement {
  return {
    text: `SELECT state, fingerprint, token::text AS token, outcome, steps FROM ${quoteSchema(schema)}.idem_lease_claim($1, $2, $3, $4, $5)`,
    values: [scope, key, fingerprint, leaseMs, ttlMs],
  }
}

/** Extends a held lease; never lets the row expire before its lease. One row means renewed. */
export function leaseRenew(schema: string, scope: string, key: string, token: string, leaseMs: number): Statement {
  return {
    text:
      `UPDATE ${quoteSchema(schema)}.idem_leases SET lease_until = clock_timestamp() + $4 * interval '1 millisecond', ` +
      `expires_at = greatest(expires_at, clock_timestamp() + $4 * interval '1 millisecond') ` +
      `WHERE scope = $1 AND key = $2 AND state = 'held' AND token = $3 AND expires_at > clock_timestamp()`,
    values: [scope, key, token, leaseMs],
  }
}

/**
 * Saves a step while the token holds. FOR SHARE on the lease row makes a concurrent
 * takeover (which locks the row FOR UPDATE) wait, and makes this statement re-check
 * the token against a takeover that committed first. One row means saved.
 */
export function leaseSaveStep(schema: string, scope: string, key: string, token: string, name: string, result: string): Statement {
  const s = quoteSchema(schema)
  return {
    text:
      `WITH lease AS (SELECT scope, key FROM ${s}.idem_leases ` +
      `WHERE scope = $1 AND key = $2 AND state = 'held' AND token = $3 AND expires_at > clock_timestamp() FOR SHARE) ` +
      `INSERT INTO ${s}.idem_steps (scope, key, name, result, token) SELECT scope, key, $4, $5, $3 FROM lease ` +
      `ON CONFLICT (scope, key, name) DO UPDATE SET result = excluded.result, token = excluded.token, created_at = now()`,
    values: [scope, key, token, name, result],
  }
}

/** Stores the outcome while the token holds and drops the key's steps. Returns `completed` = 1 or 0. */
export function leaseComplete(schema: string, scope: string, key: string, token: string, outcome: string, ttlMs: number): Statement {
  const s = quoteSchema(schema)
  return {
    text:
      `WITH done AS (UPDATE ${s}.idem_leases SET state = 'completed', outcome = $4, lease_until = NULL, ` +
      `expires_at = clock_timestamp() + $5 * interval '1 millisecond' ` +
      `WHERE scope = $1 AND key = $2 AND state = 'held' AND token = $3 AND expires_at > clock_timestamp() RETURNING scope, key), ` +
      `dropped AS (DELETE FROM ${s}.idem_steps AS st USING done WHERE st.scope = done.scope AND st.key = done.key) ` +
      `SELECT count(*)::int AS completed FROM done`,
    values: [scope, key, token, outcome, ttlMs],
  }
}

/** Ends a held lease without an outcome; the steps stay. One row means released. */
export function leaseRelease(schema: string, scope: string, key: string, token: string): Statement {
  return {
    text:
      `UPDATE ${quoteSchema(schema)}.idem_leases SET state = 'free', lease_until = NULL ` +
      `WHERE scope = $1 AND key = $2 AND state = 'held' AND token = $3 AND expires_at > clock_timestamp()`,
    values: [scope, key, token],
  }
}
