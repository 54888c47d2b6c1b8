import { inboxLockId, quoteSchema } from './index.js'

/** One schema change, as data: applied in order, each once, in one transaction. */
export interface Migration {
  version: number
  description: string
  /** The statements that apply it, for the schema given. */
  up: (schema: string) => string[]
}

/** The schema version this build of idem expects. */
export const SCHEMA_VERSION = 6

/**
 * The versioned Postgres migrations, oldest first: what `migratePostgres` applies and
 * `idem migrate --print` shows.
 */
export const migrations: readonly Migration[] = [
  {
    version: 1,
    description: 'idem_keys and idem_claim (lock and read; a held lock still answers replays)',
    up: (schema) => {
      const s = quoteSchema(schema)
      return [
        `CREATE TABLE ${s}.idem_keys (
  scope text NOT NULL,
  key text NOT NULL,
  fingerprint text NOT NULL,
  outcome text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (scope, key)
)`,
        // BRIN: expiry grows with insertion order, and a BRIN index costs inserts almost
        // nothing (measured: a btree here cost ~5% of fresh-call throughput).
        `CREATE INDEX idem_keys_expires_at ON ${s}.idem_keys USING brin (expires_at)`,
        // The lock id hashes a length-prefixed (scope, key), so ("ab","c") and ("a","bc")
        // never share a lock. A hash collision only makes two keys wait for each other.
        `CREATE FUNCTION ${s}.idem_claim(p_scope text, p_key text, p_wait_ms integer,
  OUT state text, OUT fingerprint text, OUT outcome text)
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  lock_id bigint := hashtextextended(length(p_scope)::text || ':' || p_scope || p_key, 0);
  previous_timeout text;
  live boolean;
BEGIN
  IF NOT pg_try_advisory_xact_lock(lock_id) THEN
    -- Held by the first call, or briefly by a replay. A committed record is final until
    -- it expires, so concurrent replays answer at once instead of waiting (or 409).
    SELECT k.fingerprint, k.outcome INTO fingerprint, outcome FROM ${s}.idem_keys AS k
      WHERE k.scope = p_scope AND k.key = p_key AND k.expires_at > now();
    IF FOUND THEN
      state := 'found';
      RETURN;
    END IF;
    IF p_wait_ms <= 0 THEN
      state := 'locked';
      RETURN;
    END IF;
    previous_timeout := current_setting('lock_timeout');
    BEGIN
      PERFORM set_config('lock_timeout', p_wait_ms || 'ms', true);
      PERFORM pg_advisory_xact_lock(lock_id);
      PERFORM set_config('lock_timeout', previous_timeout, true);
    EXCEPTION WHEN lock_not_available THEN
      state := 'locked';
      RETURN;
    END;
    -- Under REPEATABLE READ / SERIALIZABLE the snapshot was taken before the wait.
    IF current_setting('transaction_isolation') <> 'read committed' THEN
      state := 'stale';
      RETURN;
    END IF;
  END IF;
  -- Read under the lock: this statement's snapshot is new (VOLATILE, READ COMMITTED),
  -- so it sees a holder that committed while this call waited.
  SELECT k.fingerprint, k.outcome, k.expires_at > now() INTO fingerprint, outcome, live FROM ${s}.idem_keys AS k
    WHERE k.scope = p_scope AND k.key = p_key;
  IF FOUND AND live THEN
    state := 'found';
    RETURN;
  END IF;
  IF FOUND THEN
    -- An expired key is a new key. Removing it here, under the lock, lets the record be
    -- written with a plain INSERT (measured: ~6% faster than INSERT … ON CONFLICT).
    DELETE FROM ${s}.idem_keys AS k WHERE k.scope = p_scope AND k.key = p_key;
    fingerprint := NULL;
    outcome := NULL;
  END IF;
  state := 'new';
END
$fn$`,
      ]
    },
  },
  {
    version: 2,
    description: 'idem_once, the first-time gate of once()',
    up: (schema) => [
      `CREATE TABLE ${quoteSchema(schema)}.idem_once (
  kind text NOT NULL,
  subject text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (kind, subject)
)`,
    ],
  },
  {
    version: 3,
    description: 'idem_outbox, idem_dead_letters and idem_inbox_attempts for idem/queue',
    up: (schema) => {
      const s = quoteSchema(schema)
      return [
        // One row per queued effect. A claim leases rows by pushing next_attempt_at
        // past the lease (and naming the claim in locked_by), so due rows are exactly
        // "undelivered and next_attempt_at <= now()", which the partial index serves.
        `CREATE TABLE ${s}.idem_outbox (
  id bigserial PRIMARY KEY,
  topic text NOT NULL,
  dedupe_key text NOT NULL,
  payload jsonb NOT NULL,
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  locked_until timestamptz,
  locked_by text,
  last_error text,
  created_at timestamptz NOT NULL DEFAULT now(),
  delivered_at timestamptz,
  UNIQUE (topic, dedupe_key)
)`,
        `CREATE INDEX idem_outbox_due ON ${s}.idem_outbox (next_attempt_at) WHERE delivered_at IS NULL`,
        `CREATE TABLE ${s}.idem_dead_letters (
  id bigserial PRIMARY KEY,
  source text NOT NULL CHECK (source IN ('inbox', 'outbox')),
  name text NOT NULL,
  message_key text NOT NULL,
  payload jsonb,
  attempts integer NOT NULL,
  last_error text NOT NULL,
  first_seen_at timestamptz NOT NULL,
  dead_at timestamptz NOT NULL DEFAULT now()
)`,
        `CREATE INDEX idem_dead_letters_name ON ${s}.idem_dead_letters (source, name, dead_at)`,
        // Failed attempts of inbox messages not yet processed; a row lives only
        // between a message's first failure and its success or dead letter.
        `CREATE TABLE ${s}.idem_inbox_attempts (
  consumer text NOT NULL,
  message_key text NOT NULL,
  attempts integer NOT NULL,
  last_error text NOT NULL,
  first_failed_at timestamptz NOT NULL DEFAULT now(),
  last_failed_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (consumer, message_key)
)`,
      ]
    },
  },
  {
    version: 4,
    description: 'idem_leases, idem_steps and idem_lease_claim() for leased mode',
    up: (schema) => {
      const s = quoteSchema(schema)
      return [
        // One row per key in leased mode: the claim (state, fencing token, lease) and, once
        // completed, the outcome. Tokens are bigint microseconds (see idem_lease_claim).
        `CREATE TABLE ${s}.idem_leases (
  scope text NOT NULL,
  key text NOT NULL,
  fingerprint text NOT NULL,
  state text NOT NULL CHECK (state IN ('held', 'free', 'completed')),
  token bigint NOT NULL,
  lease_until timestamptz,
  outcome text,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (scope, key)
)`,
        `CREATE INDEX idem_leases_expires_at ON ${s}.idem_leases USING brin (expires_at)`,
        // Checkpointed step results. Each is written by its own statement (its own
        // transaction), so it survives whatever the holder rolls back later; the
        // cascade lets pruning a lease take its steps along.
        `CREATE TABLE ${s}.idem_steps (
  scope text NOT NULL,
  key text NOT NULL,
  name text NOT NULL,
  result text NOT NULL,
  token bigint NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (scope, key, name),
  FOREIGN KEY (scope, key) REFERENCES ${s}.idem_leases (scope, key) ON DELETE CASCADE
)`,
        // The whole claim decision in one round trip, under the key row's lock. A new
        // token is the previous plus one, or the clock in microseconds if greater, so
        // tokens grow even across the row's expiry and deletion.
        `CREATE FUNCTION ${s}.idem_lease_claim(p_scope text, p_key text, p_fingerprint text, p_lease_ms bigint, p_ttl_ms bigint)
RETURNS TABLE (state text, fingerprint text, token bigint, outcome text, steps text)
LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
DECLARE
  r ${s}.idem_leases%ROWTYPE;
  now_ts timestamptz;
  next_token bigint;
  resumable boolean;
BEGIN
  LOOP
    SELECT * INTO r FROM ${s}.idem_leases AS l WHERE l.scope = p_scope AND l.key = p_key FOR UPDATE;
    -- Read after the lock wait, so a waiter judges leases by the time it got the row.
    now_ts := clock_timestamp();
    next_token := (extract(epoch FROM now_ts) * 1000000)::bigint;
    IF NOT FOUND THEN
      INSERT INTO ${s}.idem_leases AS l (scope, key, fingerprint, state, token, lease_until, expires_at)
      VALUES (p_scope, p_key, p_fingerprint, 'held', next_token, now_ts + p_lease_ms * interval '1 millisecond',
              now_ts + (p_lease_ms + p_ttl_ms) * interval '1 millisecond')
      ON CONFLICT DO NOTHING;
      IF FOUND THEN
        RETURN QUERY SELECT 'acquired'::text, p_fingerprint, next_token, NULL::text, '[]'::text;
        RETURN;
      END IF;
      -- Another call inserted the row first: go round and lock it.
      CONTINUE;
    END IF;
    IF r.expires_at > now_ts THEN
      IF r.state = 'completed' THEN
        RETURN QUERY SELECT 'completed'::text, r.fingerprint, NULL::bigint, r.outcome, NULL::text;
        RETURN;
      END IF;
      IF r.state = 'held' AND r.lease_until > now_ts THEN
        RETURN QUERY SELECT 'running'::text, r.fingerprint, NULL::bigint, NULL::text, NULL::text;
        RETURN;
      END IF;
      resumable := EXISTS (SELECT 1 FROM ${s}.idem_steps AS st WHERE st.scope = p_scope AND st.key = p_key);
      IF resumable AND r.fingerprint <> p_fingerprint THEN
        RETURN QUERY SELECT 'running'::text, r.fingerprint, NULL::bigint, NULL::text, NULL::text;
        RETURN;
      END IF;
    ELSE
      -- An expired key is a new key: its steps belong to an earlier lifetime.
      DELETE FROM ${s}.idem_steps AS st WHERE st.scope = p_scope AND st.key = p_key;
      resumable := false;
    END IF;
    next_token := greatest(r.token + 1, next_token);
    UPDATE ${s}.idem_leases AS l
    SET fingerprint = p_fingerprint, state = 'held', token = next_token, outcome = NULL,
        lease_until = now_ts + p_lease_ms * interval '1 millisecond',
        expires_at = now_ts + (p_lease_ms + p_ttl_ms) * interval '1 millisecond'
    WHERE l.scope = p_scope AND l.key = p_key;
    RETURN QUERY SELECT 'acquired'::text, p_fingerprint, next_token, NULL::text,
      CASE WHEN resumable
        THEN (SELECT coalesce(json_agg(json_build_array(st.name, st.result))::text, '[]')
              FROM ${s}.idem_steps AS st WHERE st.scope = p_scope AND st.key = p_key)
        ELSE '[]' END;
    RETURN;
  END LOOP;
END
$fn$`,
      ]
    },
  },
  {
    version: 5,
    description: 'idem_inbox and idem_inbox_claim(): inbox message ids move out of idem_keys',
    up: (schema) => {
      const s = quoteSchema(schema)
      return [
        // One narrow row per processed message: the inbox needs only "done, until when".
        // Measured (bench:inbox-parts): 76–108 µs of Postgres CPU a message against
        // 114–154 µs for the same id as an idem_keys row.
        `CREATE TABLE ${s}.idem_inbox (
  consumer text NOT NULL,
  message_key text NOT NULL,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (consumer, message_key)
)`,
        `CREATE INDEX idem_inbox_expires_at ON ${s}.idem_inbox USING brin (expires_at)`,
        // idem_claim's decision for an inbox id (see version 1): the state only.
        `CREATE FUNCTION ${s}.idem_inbox_claim(p_consumer text, p_key text, p_wait_ms integer)
RETURNS text LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  lock_id bigint := ${inboxLockId('p_consumer', 'p_key')};
  previous_timeout text;
  live boolean;
BEGIN
  IF NOT pg_try_advisory_xact_lock(lock_id) THEN
    IF EXISTS (SELECT 1 FROM ${s}.idem_inbox AS i
               WHERE i.consumer = p_consumer AND i.message_key = p_key AND i.expires_at > now()) THEN
      RETURN 'found';
    END IF;
    IF p_wait_ms <= 0 THEN
      RETURN 'locked';
    END IF;
    previous_timeout := current_setting('lock_timeout');
    BEGIN
      PERFORM set_config('lock_timeout', p_wait_ms || 'ms', true);
      PERFORM pg_advisory_xact_lock(lock_id);
      PERFORM set_config('lock_timeout', previous_timeout, true);
    EXCEPTION WHEN lock_not_available THEN
      RETURN 'locked';
    END;
    IF current_setting('transaction_isolation') <> 'read committed' THEN
      RETURN 'stale';
    END IF;
  END IF;
  SELECT i.expires_at > now() INTO live FROM ${s}.idem_inbox AS i
    WHERE i.consumer = p_consumer AND i.message_key = p_key;
  IF FOUND AND live THEN
    RETURN 'found';
  END IF;
  IF FOUND THEN
    DELETE FROM ${s}.idem_inbox AS i WHERE i.consumer = p_consumer AND i.message_key = p_key;
  END IF;
  RETURN 'new';
END
$fn$`,
        // Ids recorded by earlier versions (scope inbox:<consumer> in idem_keys) move
        // here, so an upgrade forgets no processed message. Stop consumers of the older
        // version first: until then they record new ids where this version no longer looks.
        `INSERT INTO ${s}.idem_inbox (consumer, message_key, expires_at)
  SELECT substr(k.scope, 7), k.key, k.expires_at FROM ${s}.idem_keys AS k
  WHERE k.scope LIKE 'inbox:%' AND k.expires_at > now()`,
        `DELETE FROM ${s}.idem_keys WHERE scope LIKE 'inbox:%'`,
      ]
    },
  },
  {
    version: 6,
    description: 'idem_keys_by_day and idem_claim_by_day(): the key table partitioned by expiry day, for keyLayout "daily-partitions"',
    up: (schema) => {
      const s = quoteSchema(schema)
      return [
        // idem_keys, partitioned by expires_at: a day of expired keys goes with one DROP
        // of its partition instead of millions of deletes (and the vacuum after them).
        // The day partitions are made ahead by migrate() and prune() (see
        // partitions.ts). A unique index must contain the partition key, so
        // (scope, key) is not unique here: the key's advisory lock, which every writer
        // takes (idem_claim_by_day), keeps one row per key instead.
        `CREATE TABLE ${s}.idem_keys_by_day (
  scope text NOT NULL,
  key text NOT NULL,
  fingerprint text NOT NULL,
  outcome text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL
) PARTITION BY RANGE (expires_at)`,
        `CREATE INDEX idem_keys_by_day_key ON ${s}.idem_keys_by_day (scope, key)`,
        // Keys expiring past the days made ahead land here (correct, only not dropped by
        // day: prune deletes its expired rows in batches, as for idem_keys).
        `CREATE TABLE ${s}.idem_keys_by_day_later PARTITION OF ${s}.idem_keys_by_day DEFAULT`,
        // idem_claim (version 1) over idem_keys_by_day: the same decision, under a lock of
        // its own (seed 1), so that during a move between the two tables (a dual-read
        // window) a claim in one is not mistaken for a holder in the other.
        `CREATE FUNCTION ${s}.idem_claim_by_day(p_scope text, p_key text, p_wait_ms integer,
  OUT state text, OUT fingerprint text, OUT outcome text)
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  lock_id bigint := hashtextextended(length(p_scope)::text || ':' || p_scope || p_key, 1);
  previous_timeout text;
  live boolean;
BEGIN
  IF NOT pg_try_advisory_xact_lock(lock_id) THEN
    SELECT k.fingerprint, k.outcome INTO fingerprint, outcome FROM ${s}.idem_keys_by_day AS k
      WHERE k.scope = p_scope AND k.key = p_key AND k.expires_at > now();
    IF FOUND THEN
      state := 'found';
      RETURN;
    END IF;
    IF p_wait_ms <= 0 THEN
      state := 'locked';
      RETURN;
    END IF;
    previous_timeout := current_setting('lock_timeout');
    BEGIN
      PERFORM set_config('lock_timeout', p_wait_ms || 'ms', true);
      PERFORM pg_advisory_xact_lock(lock_id);
      PERFORM set_config('lock_timeout', previous_timeout, true);
    EXCEPTION WHEN lock_not_available THEN
      state := 'locked';
      RETURN;
    END;
    IF current_setting('transaction_isolation') <> 'read committed' THEN
      state := 'stale';
      RETURN;
    END IF;
  END IF;
  SELECT k.fingerprint, k.outcome, k.expires_at > now() INTO fingerprint, outcome, live FROM ${s}.idem_keys_by_day AS k
    WHERE k.scope = p_scope AND k.key = p_key
    ORDER BY k.expires_at DESC LIMIT 1;
  IF FOUND AND live THEN
    state := 'found';
    RETURN;
  END IF;
  IF FOUND THEN
    -- An expired record whose partition is not dropped yet: a new key, as in idem_claim.
    DELETE FROM ${s}.idem_keys_by_day AS k WHERE k.scope = p_scope AND k.key = p_key;
    fingerprint := NULL;
    outcome := NULL;
  END IF;
  state := 'new';
END
$fn$`,
      ]
    },
  },
]

// The plan below is the one way migrations are applied: `migratePostgres` runs it,
// `postgresMigrationScript` prints it for `psql`, and the baseline records its versions.

/** `text` as a standard SQL string literal (quotes doubled), for statements printed whole. */
export const literal = (text: string): string => `'${text.replace(/'/g, "''")}'`

/**
 * The statements every migration of `schema` starts its transaction with: the advisory
 * lock that makes concurrent runs take turns, the schema, and the version table.
 */
export function migrationPreamble(schema: string): string[] {
  const s = quoteSchema(schema)
  return [
    `SELECT pg_advisory_xact_lock(hashtextextended(${literal(`idem:migrate:${schema}`)}, 0))`,
    `CREATE SCHEMA IF NOT EXISTS ${s}`,
    migrationsTable(schema),
  ]
}

/** `idem_migrations`, where each applied version is recorded. */
export function migrationsTable(schema: string): string {
  return `CREATE TABLE IF NOT EXISTS ${quoteSchema(schema)}.idem_migrations (version integer PRIMARY KEY, description text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`
}

/** The row recording `migration` as applied; `ifAbsent` leaves a recorded one alone (a baseline). */
export function versionRow(schema: string, migration: Migration, { ifAbsent = false } = {}): string {
  return `INSERT INTO ${quoteSchema(schema)}.idem_migrations (version, description) VALUES (${migration.version}, ${literal(migration.description)})${ifAbsent ? ' ON CONFLICT (version) DO NOTHING' : ''}`
}

/** Each version after `from`, oldest first, with the statements that apply it and then record it. */
export function pendingMigrations(schema: string, from: number): { migration: Migration; statements: string[] }[] {
  return migrations.filter((migration) => migration.version > from).map((migration) => ({ migration, statements: [...migration.up(schema), versionRow(schema, migration)] }))
}
