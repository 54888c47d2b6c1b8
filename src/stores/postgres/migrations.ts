import { quoteSchema } from './sql.js'

/** One schema change, as data: applied in order, each once, in one transaction. */
export interface Migration {
  version: number
  description: string
  up: (schema: string) => string[]
}

/** The schema version this build of idem expects. */
export const SCHEMA_VERSION = 2

export const migrations: readonly Migration[] = [
  {
    version: 1,
    description: 'idem_keys and the idem_claim lock-then-read function',
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
        `CREATE FUNCTION ${s}.idem_claim(p_scope text, p_key text, p_wait_ms integer)
RETURNS TABLE (state text, fingerprint text, outcome text)
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  lock_id bigint := hashtextextended(length(p_scope)::text || ':' || p_scope || p_key, 0);
  previous_timeout text;
BEGIN
  IF NOT pg_try_advisory_xact_lock(lock_id) THEN
    IF p_wait_ms <= 0 THEN
      RETURN QUERY SELECT 'locked'::text, NULL::text, NULL::text;
      RETURN;
    END IF;
    previous_timeout := current_setting('lock_timeout');
    BEGIN
      PERFORM set_config('lock_timeout', p_wait_ms || 'ms', true);
      PERFORM pg_advisory_xact_lock(lock_id);
      PERFORM set_config('lock_timeout', previous_timeout, true);
    EXCEPTION WHEN lock_not_available THEN
      RETURN QUERY SELECT 'locked'::text, NULL::text, NULL::text;
      RETURN;
    END;
    -- Under REPEATABLE READ / SERIALIZABLE the snapshot was taken before the wait.
    IF current_setting('transaction_isolation') <> 'read committed' THEN
      RETURN QUERY SELECT 'stale'::text, NULL::text, NULL::text;
      RETURN;
    END IF;
  END IF;
  RETURN QUERY
    SELECT CASE WHEN k.scope IS NULL THEN 'new' ELSE 'found' END, k.fingerprint, k.outcome
    FROM (SELECT 1) AS one
    LEFT JOIN ${s}.idem_keys AS k ON k.scope = p_scope AND k.key = p_key AND k.expires_at > now();
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
]
