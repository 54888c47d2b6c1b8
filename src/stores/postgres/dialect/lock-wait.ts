/**
 * The PL/pgSQL of a claim function whose key's advisory lock (`lock_id`) is held by
 * another transaction: wait for it up to `p_wait_ms` (none at 0), then go on under it,
 * unless the wait ran out (`locked`) or the snapshot predates the wait (`stale`: under
 * REPEATABLE READ or SERIALIZABLE the holder's commit would not be seen). `locked` and
 * `stale` are the statements that answer so (a RETURN each). The function declares
 * `previous_timeout text`. Shared by every claim function of every version: the text a
 * migration applies, so change it only with a new version.
 */
export function lockWait(answers: { readonly locked: string; readonly stale: string }): string {
  return `    IF p_wait_ms <= 0 THEN
      ${answers.locked}
    END IF;
    previous_timeout := current_setting('lock_timeout');
    BEGIN
      PERFORM set_config('lock_timeout', p_wait_ms || 'ms', true);
      PERFORM pg_advisory_xact_lock(lock_id);
      PERFORM set_config('lock_timeout', previous_timeout, true);
    EXCEPTION WHEN lock_not_available THEN
      ${answers.locked}
    END;
    -- Under REPEATABLE READ / SERIALIZABLE the snapshot was taken before the wait.
    IF current_setting('transaction_isolation') <> 'read committed' THEN
      ${answers.stale}
    END IF;`
}
