/**
 * 16 MiB: the largest outcome (and leased step result) the Postgres, SQLite, Redis and
 * memory stores declare (`maxOutcomeBytes`). Their backends hold far more (a Postgres
 * `text` value 1 GB, a Redis string 512 MB, an SQLite value 10⁹ bytes by default), but
 * an outcome is written and read whole, in one statement or one script: at 16 MiB a
 * Postgres commit already takes seconds and Redis, single-threaded, is busy for every
 * client while it copies one. The contract suites store and replay exactly this size.
 */
export const MAX_OUTCOME_BYTES = 16 * 1024 * 1024
