import { quoteSchema } from '../statement.js'
import type { Migration } from './migration.js'

// The migration of leased mode's tables (version 4).

export const leaseTables: Migration = {
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
}
