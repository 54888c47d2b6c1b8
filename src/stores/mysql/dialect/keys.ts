import type { KeyStatements } from '../../sql/dialect.js'
import { named } from '../../sql/statement.js'

// ---- idem_keys (migration 1): the transactional engine's key records ----

/** Reads a key's live record, outside any transaction, with no lock. */
export const lookup = "SELECT fingerprint, outcome FROM idem_keys WHERE scope = ? AND `key` = ? AND fingerprint <> '' AND expires_at > ?"

/** Replaces the placeholder the claim wrote (or found) with the record, under the key's lock. */
export const save = 'UPDATE idem_keys SET fingerprint = ?, outcome = ?, created_at = ?, expires_at = ? WHERE scope = ? AND `key` = ?'

/**
 * The key table's statements for the protocol (src/stores/sql/key-sessions.ts). The
 * claim is `idem_keys_claim` (claim.ts): a live record read without a lock, else the
 * key's row locked (inserted as a placeholder when new), waiting up to `waitMs` for its
 * holder. The record is an UPDATE of that row. mysql2 sends one statement per round
 * trip, so a transaction of the store's own opens with `CALL idem_keys_open` (START
 * TRANSACTION, then the claim) and ends with `CALL idem_keys_record` (the UPDATE, then
 * COMMIT): a round trip each, around the function's. A retry of a key this store
 * recorded lately is one read first, outside any transaction. The transactions run at
 * the server's isolation level: the claim reads under its lock with a locking read,
 * which sees the latest commit at any level.
 */
export const keyStatements: KeyStatements = {
  opening: named('begin', 'START TRANSACTION'),
  claim: { statement: named('claim', 'CALL idem_keys_claim(?, ?, ?, ?)'), takes: ['scope', 'key', 'waitMs', 'now'] },
  lookup: { statement: named('lookup', lookup), takes: ['scope', 'key', 'now'] },
  save: { statement: named('save', save), takes: ['fingerprint', 'outcome', 'now', 'expiresAt', 'scope', 'key'] },
  commit: named('commit', 'COMMIT'),
  owned: {
    claim: { statement: named('open', 'CALL idem_keys_open(?, ?, ?, ?)'), takes: ['scope', 'key', 'waitMs', 'now'] },
    save: { statement: named('record', 'CALL idem_keys_record(?, ?, ?, ?, ?, ?)'), takes: ['fingerprint', 'outcome', 'now', 'expiresAt', 'scope', 'key'] },
  },
  readFirst: 'recorded keys',
}
