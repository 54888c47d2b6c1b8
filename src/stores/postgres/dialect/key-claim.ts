import { lockWait } from './lock-wait.js'
import { quoteSchema } from './statement.js'

// ---- the claim of a key table (migrations 1, 6 and 7): written once, for idem_keys and idem_keys_by_day ----

/**
 * What the claim's SQL needs to know of a key table. `idem_keys` has a primary key on
 * `(scope, key)`; `idem_keys_by_day` cannot (a unique index must hold the partition
 * key), so its reads take a key's latest row, and its lock has a namespace of its own
 * (seed 1) so that a move between the two tables (a dual-read window) never mistakes a
 * claim in one for a holder in the other.
 */
export interface KeyTableShape {
  readonly table: 'idem_keys' | 'idem_keys_by_day'
  readonly seed: 0 | 1
  readonly unique: boolean
}

export const KEYS: KeyTableShape = { table: 'idem_keys', seed: 0, unique: true }
export const KEYS_BY_DAY: KeyTableShape = { table: 'idem_keys_by_day', seed: 1, unique: false }

/**
 * The advisory lock of a key, over SQL expressions for the scope and the key: a hash of
 * the length-prefixed `(scope, key)`, so ("ab","c") and ("a","bc") never share a lock
 * (a hash collision only makes two keys wait for each other). Every version of idem
 * since the first takes this very lock, so claims of old and new code exclude each other.
 */
export function keyLockId(scope: string, key: string, seed: 0 | 1): string {
  return `hashtextextended(length(${scope})::text || ':' || ${scope} || ${key}, ${seed})`
}

/** The claim function of a key table: `idem_keys_claim`, `idem_keys_by_day_claim`. */
export function claimFunctionName(shape: KeyTableShape): string {
  return `${shape.table}_claim`
}

/**
 * `CREATE FUNCTION <table>_claim(scope, key, wait_ms) RETURNS text`: takes the key's
 * transaction-scoped advisory lock (waiting up to `wait_ms`), then reads the record,
 * removing an expired one, in one statement. What it returns:
 * `n` new, `l` locked, `s` stale, or `f` followed by the fingerprint's length in
 * characters, `:`, the fingerprint and the outcome (found); `readClaim` in keys.ts reads it.
 *
 * One value, called in the select list, because that is what a call costs least as:
 * measured on Postgres 15 (instructions of a backend, callgrind), the same function
 * returning three OUT columns and called in FROM cost 30,000 instructions more per
 * fresh key (its function scan and tuple store), about 16% of what the key costs
 * Postgres. It is VOLATILE so that, under READ COMMITTED, its read takes a new
 * snapshot after the lock wait and sees the holder's commit.
 *
 * The text migration 7 applies: change it only with a new version.
 */
export function claimFunction(schema: string, shape: KeyTableShape): string {
  const s = quoteSchema(schema)
  const row = `${s}.${shape.table} AS k WHERE k.scope = p_scope AND k.key = p_key`
  const latest = shape.unique ? '' : ' ORDER BY k.expires_at DESC LIMIT 1'
  const found = `'f' || length(r.fingerprint) || ':' || r.fingerprint || r.outcome`
  return `CREATE FUNCTION ${s}.${claimFunctionName(shape)}(p_scope text, p_key text, p_wait_ms integer)
RETURNS text LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  lock_id bigint := ${keyLockId('p_scope', 'p_key', shape.seed)};
  previous_timeout text;
  r record;
BEGIN
  IF NOT pg_try_advisory_xact_lock(lock_id) THEN
    -- Held by the first call, or briefly by a replay. A committed record is final until
    -- it expires, so concurrent replays answer at once instead of waiting (or 409).
    SELECT k.fingerprint, k.outcome INTO r FROM ${row} AND k.expires_at > now()${latest};
    IF FOUND THEN
      RETURN ${found};
    END IF;
${lockWait({ locked: "RETURN 'l';", stale: "RETURN 's';" })}
  END IF;
  -- Read under the lock, in a snapshot taken after it: a holder that committed while
  -- this call waited is seen.
  SELECT k.fingerprint, k.outcome, k.expires_at > now() AS live INTO r FROM ${row}${latest};
  IF FOUND THEN
    IF r.live THEN
      RETURN ${found};
    END IF;
    -- An expired key is a new key. Removing it here, under the lock, lets the record be
    -- written with a plain INSERT.
    DELETE FROM ${row};
  END IF;
  RETURN 'n';
END
$fn$`
}

/** The claim function of versions 1 and 6: `idem_claim`, `idem_claim_by_day`. */
function legacyClaimFunctionName(shape: KeyTableShape): string {
  return shape.unique ? 'idem_claim' : 'idem_claim_by_day'
}

/**
 * `CREATE FUNCTION idem_claim(scope, key, wait_ms)` (version 1, for idem_keys) and
 * `idem_claim_by_day` (version 6): the decision `claimFunction` makes, returned as three
 * OUT columns (`state`: new, locked, stale or found; `fingerprint`; `outcome`). Still
 * created: an instance of an earlier version claims through them during a rolling
 * deploy, under the same lock as `claimFunction`'s.
 *
 * The text migrations 1 and 6 apply: change it only with a new version.
 */
export function legacyClaimFunction(schema: string, shape: KeyTableShape): string {
  const s = quoteSchema(schema)
  const row = `${s}.${shape.table} AS k WHERE k.scope = p_scope AND k.key = p_key`
  const latest = shape.unique ? '' : '\n    ORDER BY k.expires_at DESC LIMIT 1'
  return `CREATE FUNCTION ${s}.${legacyClaimFunctionName(shape)}(p_scope text, p_key text, p_wait_ms integer,
  OUT state text, OUT fingerprint text, OUT outcome text)
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  lock_id bigint := ${keyLockId('p_scope', 'p_key', shape.seed)};
  previous_timeout text;
  live boolean;
BEGIN
  IF NOT pg_try_advisory_xact_lock(lock_id) THEN
    -- Held by the first call, or briefly by a replay. A committed record is final until
    -- it expires, so concurrent replays answer at once instead of waiting (or 409).
    SELECT k.fingerprint, k.outcome INTO fingerprint, outcome FROM ${row} AND k.expires_at > now();
    IF FOUND THEN
      state := 'found';
      RETURN;
    END IF;
${lockWait({ locked: "state := 'locked'; RETURN;", stale: "state := 'stale'; RETURN;" })}
  END IF;
  -- Read under the lock: this statement's snapshot is new (VOLATILE, READ COMMITTED),
  -- so it sees a holder that committed while this call waited.
  SELECT k.fingerprint, k.outcome, k.expires_at > now() INTO fingerprint, outcome, live FROM ${row}${latest};
  IF FOUND AND live THEN
    state := 'found';
    RETURN;
  END IF;
  IF FOUND THEN
    -- An expired key is a new key. Removing it here, under the lock, lets the record be
    -- written with a plain INSERT.
    DELETE FROM ${row};
    fingerprint := NULL;
    outcome := NULL;
  END IF;
  state := 'new';
END
$fn$`
}
