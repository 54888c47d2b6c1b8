import { claimFunction, KEYS, KEYS_BY_DAY, legacyClaimFunction } from '../key-claim.js'
import { quoteSchema } from '../statement.js'
import type { Migration } from './migration.js'

// The migrations of the transactional engine's key tables: idem_keys (version 1),
// idem_keys_by_day (version 6), and their claim functions (version 7).

/** The columns of both key tables (versions 1 and 6): change them only with a new version. */
const KEY_COLUMNS = `  scope text NOT NULL,
  key text NOT NULL,
  fingerprint text NOT NULL,
  outcome text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL`

export const keysTable: Migration = {
  version: 1,
  description: 'idem_keys and idem_claim (lock and read; a held lock still answers replays)',
  up: (schema) => {
    const s = quoteSchema(schema)
    return [
      `CREATE TABLE ${s}.idem_keys (
${KEY_COLUMNS},
  PRIMARY KEY (scope, key)
)`,
      // BRIN: expiry grows with insertion order, and a BRIN index costs inserts almost
      // nothing (measured: a btree here cost ~5% of fresh-call throughput). Version 7
      // drops it again (see there).
      `CREATE INDEX idem_keys_expires_at ON ${s}.idem_keys USING brin (expires_at)`,
      // The lock id hashes a length-prefixed (scope, key), so ("ab","c") and ("a","bc")
      // never share a lock. A hash collision only makes two keys wait for each other.
      legacyClaimFunction(schema, KEYS),
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
${KEY_COLUMNS}
) PARTITION BY RANGE (expires_at)`,
      `CREATE INDEX idem_keys_by_day_key ON ${s}.idem_keys_by_day (scope, key)`,
      // Keys expiring past the days made ahead land here (correct, only not dropped by
      // day: prune deletes its expired rows in batches, as for idem_keys).
      `CREATE TABLE ${s}.idem_keys_by_day_later PARTITION OF ${s}.idem_keys_by_day DEFAULT`,
      // idem_claim (version 1) over idem_keys_by_day: the same decision, under a lock of
      // its own (seed 1), so that during a move between the two tables (a dual-read
      // window) a claim in one is not mistaken for a holder in the other.
      legacyClaimFunction(schema, KEYS_BY_DAY),
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
