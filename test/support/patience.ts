/**
 * How long a test waits before it calls something hung: one place that scales hang guards
 * (an `eventually` budget, a child process's timeout, a test's own timeout) by how busy
 * the machine is. A guard only ends a wait that would otherwise never end; it is never an
 * assertion that something was fast. Tests wait for the event itself (a promise, a gate,
 * a row appearing) and use these budgets only as the bound after which the event is
 * declared never to come.
 *
 * The factor is the load average per core: the larger of the 1- and 5-minute load
 * averages (the 1-minute one lags a burst by up to a minute; the 5-minute one keeps a
 * guard long while a burst ends) over `os.availableParallelism()`, clamped to
 * [{@link PATIENCE_FLOOR}, {@link PATIENCE_CEILING}]: an idle machine keeps the guards as
 * written, a machine with five runnable processes per core waits five times as long, and
 * no guard grows beyond ten times (a run that is that slow is hung, or the machine is too
 * busy to say anything). `IDEM_TEST_PATIENCE=<factor>` fixes the factor (still clamped),
 * e.g. to reproduce a CI run's budgets.
 */
import { availableParallelism, loadavg } from 'node:os'

/** The least factor: on an idle machine a guard is what the test wrote. */
export const PATIENCE_FLOOR = 1
/** The largest factor: beyond ten times its written budget a wait is reported as hung. */
export const PATIENCE_CEILING = 10

/** The factor hang guards are scaled by now (see the module's comment). */
export function patienceFactor(): number {
  const fixed = process.env.IDEM_TEST_PATIENCE
  const [one, five] = loadavg()
  const factor = fixed !== undefined && fixed !== '' ? Number(fixed) : Math.max(one ?? 0, five ?? 0) / availableParallelism()
  if (!Number.isFinite(factor)) throw new Error(`IDEM_TEST_PATIENCE must be a number, got ${JSON.stringify(fixed)}`)
  return Math.min(PATIENCE_CEILING, Math.max(PATIENCE_FLOOR, factor))
}

/**
 * `ms`, a hang guard written for an idle machine, scaled by {@link patienceFactor}. Use it
 * for budgets after which a wait is declared hung, never for a wait that lets something
 * happen nor for a bound a test asserts.
 */
export function patience(ms: number): number {
  return Math.ceil(ms * patienceFactor())
}
