import { named, quoteSchema, type NamedStatement, type Statement } from './statement.js'

// ---- idem_keys (migration 1): the transactional engine's key records ----

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
 * Tries the key's advisory lock (the one `idem_claim` takes) without waiting, in the
 * peek's own transaction: false means a call holds the key right now. The peek reads
 * the record in the next statement, so in a snapshot taken after this one: a holder
 * that committed and let go before the try is seen.
 */
export function tryKeyLock(scope: string, key: string, seed: 0 | 1): Statement {
  return {
    text: `SELECT pg_try_advisory_xact_lock(hashtextextended(length($1)::text || ':' || $1 || $2, ${seed})) AS free`,
    values: [scope, key],
  }
}

/**
 * A table the transactional store keeps keys in, as the statements it runs on it:
 * `idem_keys` or `idem_keys_by_day` (every call: fingerprint and outcome; the inbox has
 * its own statements, in inbox.ts). Each statement's text is
 * built once, with the table; a call only builds its values. `prepared` holds the same
 * texts under their names, for the wire to prepare once per connection.
 */
export interface KeyTable {
  /** Tries the key's advisory lock without waiting (`free`: nobody held it), for a peek. */
  tryLock(scope: string, key: string): Statement
  claim(scope: string, key: string, waitMs: number): Statement
  lookup(scope: string, key: string): Statement
  save(scope: string, key: string, fingerprint: string, outcome: string, ttlMs: number): Statement
  readonly prepared: { claim: NamedStatement; lookup: NamedStatement; save: NamedStatement }
}

/** `idem_keys`: the statements above, their texts built once. */
export function keysTable(schema: string): KeyTable {
  const texts = {
    claim: claim(schema, '', '', 0).text,
    lookup: lookup(schema, '', '').text,
    save: save(schema, '', '', '', '', 0).text,
    tryLock: tryKeyLock('', '', 0).text,
  }
  return {
    tryLock: (scope, key) => ({ text: texts.tryLock, values: [scope, key] }),
    claim: (scope, key, waitMs) => ({ text: texts.claim, values: [scope, key, waitMs] }),
    lookup: (scope, key) => ({ text: texts.lookup, values: [scope, key] }),
    save: (scope, key, fingerprint, outcome, ttlMs) => ({ text: texts.save, values: [scope, key, fingerprint, outcome, ttlMs] }),
    prepared: { claim: named('claim', texts.claim), lookup: named('lookup', texts.lookup), save: named('save', texts.save) },
  }
}


// ---- idem_keys_by_day (migration 6): the same records, partitioned by expiry day ----

/**
 * `idem_keys_by_day`: the key table of `keyLayout: 'daily-partitions'`, with the same
 * statements as `idem_keys` (the claim through `idem_claim_by_day`).
 */
export function keysByDayTable(schema: string): KeyTable {
  const s = quoteSchema(schema)
  const claimText = `SELECT state, fingerprint, outcome FROM ${s}.idem_claim_by_day($1, $2, $3)`
  const saveText =
    `INSERT INTO ${s}.idem_keys_by_day (scope, key, fingerprint, outcome, created_at, expires_at) ` +
    `VALUES ($1, $2, $3, $4, now(), now() + $5 * interval '1 millisecond')`
  const lookupText = `SELECT fingerprint, outcome FROM ${s}.idem_keys_by_day WHERE scope = $1 AND key = $2 AND expires_at > now()`
  return {
    tryLock: (scope, key) => tryKeyLock(scope, key, 1),
    claim: (scope, key, waitMs) => ({ text: claimText, values: [scope, key, waitMs] }),
    lookup: (scope, key) => ({ text: lookupText, values: [scope, key] }),
    save: (scope, key, fingerprint, outcome, ttlMs) => ({ text: saveText, values: [scope, key, fingerprint, outcome, ttlMs] }),
    prepared: {
      claim: named('claim_by_day', claimText),
      lookup: named('lookup_by_day', lookupText),
      save: named('save_by_day', saveText),
    },
  }
}
