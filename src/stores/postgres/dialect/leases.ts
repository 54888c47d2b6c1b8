import { quoteSchema, type Statement } from './statement.js'

// ---- leased mode (migration 4): idem_leases, idem_steps ----
// Every statement runs on its own (autocommit), so each is its own transaction. The
// writes through a claim's lease are compare-and-set on (state 'held', the claim's
// token): a replaced claim's token matches no row and changes nothing. Tokens travel as
// text (bigint).

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

/** One row while the token holds the key: what a lease's fencing token is checked with. */
export function leaseHolds(schema: string, scope: string, key: string, token: string): Statement {
  return {
    text: `SELECT 1 FROM ${quoteSchema(schema)}.idem_leases WHERE scope = $1 AND key = $2 AND state = 'held' AND token = $3 AND expires_at > clock_timestamp()`,
    values: [scope, key, token],
  }
}
