// ---- the claim of a key (migration 1): the key's row lock, taken the InnoDB way ----

/**
 * The expiry of a row that only holds a key's lock: a claim inserts one (fingerprint
 * `''`) and the record replaces it at commit. Far in the future, so that pruning (which
 * deletes rows by expiry) never reaches a claim in flight and waits on its lock.
 */
export const HELD_UNTIL = '9223372036854775807'

/**
 * `idem_lock(scope, key, wait_ms, now, OUT held)`: takes the key's row lock, waiting up
 * to `wait_ms` (rounded up to whole seconds: InnoDB's `innodb_lock_wait_timeout`; 0
 * does not wait on MariaDB, and waits 1 s on MySQL, whose least is 1). A new key's row
 * is inserted as a placeholder (`fingerprint = ''`), an existing one is locked by the
 * `ON DUPLICATE KEY UPDATE`, which on a primary key takes an exclusive record lock and
 * no gap lock at any isolation level. A concurrent claim of the same key therefore
 * waits on the first transaction's row (its INSERT's duplicate check) until it commits
 * or rolls back. `held` is false when the wait ran out (error 1205, which InnoDB rolls
 * back as the statement alone). Any other error (a deadlock, 1213: InnoDB rolled the
 * transaction back, and the caller's retry runs it again) is raised again, the
 * session's lock wait restored first, so a pooled connection never keeps the claim's.
 */
export const lockProcedure = `CREATE PROCEDURE idem_lock(IN p_scope VARBINARY(3072), IN p_key VARBINARY(3072), IN p_wait_ms BIGINT, IN p_now BIGINT, OUT o_held BOOLEAN)
MODIFIES SQL DATA
BEGIN
  DECLARE v_timeout BIGINT DEFAULT @@SESSION.innodb_lock_wait_timeout;
  DECLARE EXIT HANDLER FOR 1205
  BEGIN
    SET SESSION innodb_lock_wait_timeout = v_timeout;
    SET o_held = FALSE;
  END;
  -- Any other failure (a deadlock, a lost connection's kill) leaves the session as it was.
  DECLARE EXIT HANDLER FOR SQLEXCEPTION
  BEGIN
    SET SESSION innodb_lock_wait_timeout = v_timeout;
    RESIGNAL;
  END;
  SET SESSION innodb_lock_wait_timeout = CEIL(GREATEST(p_wait_ms, 0) / 1000);
  INSERT INTO idem_keys (scope, \`key\`, fingerprint, outcome, created_at, expires_at)
    VALUES (p_scope, p_key, '', '', p_now, ${HELD_UNTIL})
    ON DUPLICATE KEY UPDATE scope = scope;
  SET SESSION innodb_lock_wait_timeout = v_timeout;
  SET o_held = TRUE;
END`

/** The claim's one value for a live record: `f`, the fingerprint's length in characters, `:`, the fingerprint, the outcome (src/stores/sql/key-sessions.ts `readClaim`). */
const FOUND = "CONCAT('f', CHAR_LENGTH(k.fingerprint), ':', k.fingerprint, k.outcome)"
const LIVE = "k.fingerprint <> '' AND k.expires_at > p_now"
const ROW = 'k.scope = p_scope AND k.`key` = p_key'

/**
 * `idem_claim(scope, key, wait_ms, now, OUT claim)`: the claim as one value: a live
 * record (`f…`) read without any lock first (a committed record is final until it
 * expires, so replays never wait for one another), else the key's lock (`l` when the
 * wait ran out), then the row read under it by a locking read, which sees the latest
 * commit at any isolation level (a snapshot taken before the wait would not): `f…` for
 * a holder that committed while this call waited, `n` for a placeholder or an expired
 * record (the record overwrites it at commit).
 */
export const claimProcedure = `CREATE PROCEDURE idem_claim(IN p_scope VARBINARY(3072), IN p_key VARBINARY(3072), IN p_wait_ms BIGINT, IN p_now BIGINT, OUT o_claim LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
MODIFIES SQL DATA
BEGIN
  DECLARE v_held BOOLEAN;
  -- No row is no record: the variable stays NULL.
  DECLARE CONTINUE HANDLER FOR NOT FOUND BEGIN END;
  SET o_claim = NULL;
  -- SELECT … INTO, a consistent read: \`SET v = (SELECT …)\` would take shared locks.
  SELECT ${FOUND} INTO o_claim FROM idem_keys AS k WHERE ${ROW} AND ${LIVE};
  IF o_claim IS NULL THEN
    CALL idem_lock(p_scope, p_key, p_wait_ms, p_now, v_held);
    IF v_held THEN
      SELECT IF(${LIVE}, ${FOUND}, 'n') INTO o_claim FROM idem_keys AS k WHERE ${ROW} FOR UPDATE;
    ELSE
      SET o_claim = 'l';
    END IF;
  END IF;
END`

const IDENTITY_IN = 'VARBINARY(3072)'
const TEXT_IN = 'LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin'

/** `idem_keys_claim(scope, key, wait_ms, now)`: one row, `claim`, what `idem_claim` says. */
export const keysClaimProcedure = `CREATE PROCEDURE idem_keys_claim(IN p_scope VARBINARY(3072), IN p_key VARBINARY(3072), IN p_wait_ms BIGINT, IN p_now BIGINT)
MODIFIES SQL DATA
BEGIN
  DECLARE v_claim LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
  CALL idem_claim(p_scope, p_key, p_wait_ms, p_now, v_claim);
  SELECT v_claim AS claim;
END`

/**
 * `idem_keys_open(scope, key, wait_ms, now)`: START TRANSACTION and the claim, in one
 * statement (one round trip) for a transaction of the store's own, answering one row,
 * `claim`, as `idem_keys_claim` does. A new key costs one plain INSERT of its placeholder
 * (no read, no nested CALL): inserted, the call holds the key's row lock (`n`). A row
 * already there with an uncommitted holder makes the INSERT's duplicate check wait on
 * its lock (up to `wait_ms`: `l` when it runs out) until the holder rolls back (the
 * INSERT then goes through) or commits. A committed row (1062: a replay, an expired
 * record, a holder that committed while this call waited) rolls the transaction back,
 * letting go of the shared lock the duplicate check took, and claims again in a new one
 * through `idem_claim`: the same decision, the same locks as `idem_keys_claim`.
 */
export const keysOpenProcedure = `CREATE PROCEDURE idem_keys_open(IN p_scope ${IDENTITY_IN}, IN p_key ${IDENTITY_IN}, IN p_wait_ms BIGINT, IN p_now BIGINT)
MODIFIES SQL DATA
BEGIN
  DECLARE v_state CHAR(1) DEFAULT 'n';
  DECLARE v_timeout BIGINT DEFAULT @@SESSION.innodb_lock_wait_timeout;
  -- Any other failure (a deadlock: the caller sends this again) leaves the session as it was.
  DECLARE EXIT HANDLER FOR SQLEXCEPTION
  BEGIN
    SET SESSION innodb_lock_wait_timeout = v_timeout;
    RESIGNAL;
  END;
  START TRANSACTION;
  SET SESSION innodb_lock_wait_timeout = CEIL(GREATEST(p_wait_ms, 0) / 1000);
  BEGIN
    DECLARE EXIT HANDLER FOR 1062 SET v_state = 'd';
    DECLARE EXIT HANDLER FOR 1205 SET v_state = 'l';
    INSERT INTO idem_keys (scope, \`key\`, fingerprint, outcome, created_at, expires_at)
      VALUES (p_scope, p_key, '', '', p_now, ${HELD_UNTIL});
  END;
  SET SESSION innodb_lock_wait_timeout = v_timeout;
  IF v_state = 'd' THEN
    BEGIN
      DECLARE v_claim ${TEXT_IN};
      ROLLBACK;
      START TRANSACTION;
      CALL idem_claim(p_scope, p_key, p_wait_ms, p_now, v_claim);
      SELECT v_claim AS claim;
    END;
  ELSE
    SELECT v_state AS claim;
  END IF;
END`

/**
 * `idem_keys_record(fingerprint, outcome, now, expires_at, scope, key)`: the record
 * replaces the key's row (the claim's placeholder, under its lock), then COMMIT: the
 * end of a transaction of the store's own in one statement, one round trip.
 */
export const keysRecordProcedure = `CREATE PROCEDURE idem_keys_record(IN p_fingerprint ${TEXT_IN}, IN p_outcome ${TEXT_IN}, IN p_now BIGINT, IN p_expires_at BIGINT, IN p_scope ${IDENTITY_IN}, IN p_key ${IDENTITY_IN})
MODIFIES SQL DATA
BEGIN
  UPDATE idem_keys SET fingerprint = p_fingerprint, outcome = p_outcome, created_at = p_now, expires_at = p_expires_at WHERE scope = p_scope AND \`key\` = p_key;
  COMMIT;
END`

/**
 * `idem_inbox_claim(consumer, key, wait_ms, now)`: one row, `state` (`new`, `found` or
 * `locked`), for a message id: a key of scope `inbox:<consumer>`.
 */
export const inboxClaimProcedure = `CREATE PROCEDURE idem_inbox_claim(IN p_consumer VARBINARY(3072), IN p_key VARBINARY(3072), IN p_wait_ms BIGINT, IN p_now BIGINT)
MODIFIES SQL DATA
BEGIN
  DECLARE v_claim LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
  CALL idem_claim(CONCAT('inbox:', p_consumer), p_key, p_wait_ms, p_now, v_claim);
  SELECT CASE LEFT(v_claim, 1) WHEN 'n' THEN 'new' WHEN 'l' THEN 'locked' ELSE 'found' END AS state;
END`
