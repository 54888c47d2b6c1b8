import { claimFunction, KEYS, KEYS_BY_DAY } from '../key-claim.js'
import { quoteSchema } from '../statement.js'
import type { Migration } from './migration.js'

// The migrations of the transactional engine's key tables: idem_keys (version 1),
// idem_keys_by_day (version 6), and their claim functions (version 7).

export const keysTable: Migration = {
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
      // nothing (measured: a btree here cost ~5% of fresh-call throughput). Version 7
      // drops it again (see there).
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
}

export const keysByDayTable: Migration = {
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
}

export const keyClaims: Migration = {
  version: 7,
  description:
    'idem_keys_claim() and idem_keys_by_day_claim(): the claim as one value, cheaper to call than idem_claim(); ' +
    "idem_keys' BRIN index on expires_at dropped; rows unchanged",
  up: (schema) => {
    const s = quoteSchema(schema)
    return [
      // The functions of versions 1 and 6 stay: an instance of the previous version, still
      // serving during a rolling deploy, claims through them. All take the same lock and
      // read the same rows, so old and new instances exclude each other key by key.
      claimFunction(schema, KEYS),
      claimFunction(schema, KEYS_BY_DAY),
      // The BRIN index cost every insert 17,000 instructions (callgrind, Postgres 15: a
      // tenth of what a fresh key costs Postgres) and spares prune nothing once vacuum
      // lets new keys into the pages of pruned ones: every range's summary then spans old
      // and new expiries, and prune's scan reads every page with or without it. Dropping
      // it needs the table's lock, for as long as the calls open on it last: waited for 2 s
      // at most (claims queue behind the wait), then the migration fails, to be run again.
      `SET LOCAL lock_timeout = '2s'`,
      `DROP INDEX IF EXISTS ${s}.idem_keys_expires_at`,
      `SET LOCAL lock_timeout TO DEFAULT`,
    ]
  },
}
