/**
 * Bounded holds (DESIGN "Bounded holds"): a call that holds a key (a transaction and its
 * lock, or a renewed lease) has a deadline, and past it idem lets the hold go, so a
 * function that never settles (a route that never answers, a handler stuck on a dead
 * socket) cannot keep its key, and its database connection, until the process restarts.
 */

/**
 * 5 minutes: how long a direct engine call or an inbox handler may hold its key by
 * default. Long enough for any work that belongs in one call (a slow batch of writes, an
 * LLM step), short enough that a call that never settles frees its key within minutes
 * rather than at the next restart. The HTTP middleware has a shorter default of its own.
 */
export const DEFAULT_DEADLINE_MS = 5 * 60 * 1000

/**
 * Waits for `work`, a held call's function, for up to `deadlineMs`, and settles as it
 * does if it settles in time. Otherwise, when the deadline passes, runs `expire` (which
 * lets the hold go and makes the error the call fails with) and rejects with that
 * error; what `work` does afterwards is ignored here.
 * @example
 * const value = await withinDeadline(fn(tx), 30_000, async () => { await session.abandon(); return new OverranError('…') })
 */
export function withinDeadline<T>(work: PromiseLike<T>, deadlineMs: number, expire: () => Promise<Error>): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let expired = false
    const timer = setTimeout(() => {
      expired = true
      expire().then(reject, reject)
    }, deadlineMs)
    // The timer must not keep a process alive on its own; the held work does, if anything.
    timer.unref()
    work.then(
      (value) => {
        if (expired) return
        clearTimeout(timer)
        resolve(value)
      },
      (error: unknown) => {
        if (expired) return
        clearTimeout(timer)
        reject(error)
      },
    )
  })
}

/**
 * True for a promise (anything with a `then`): a function that returned one is still
 * running, and only then is there a deadline to watch.
 * @example if (isThenable(returned)) value = await withinDeadline(returned, deadlineMs, expire)
 */
export function isThenable<T>(value: T | PromiseLike<T>): value is PromiseLike<T> {
  return value !== null && (typeof value === 'object' || typeof value === 'function') && typeof (value as { then?: unknown }).then === 'function'
}

/** What `letGo` needs of a held session: the transactional `Session` and the inbox's both fit. */
export interface HeldSession {
  rollback(): Promise<void>
  abandon?(): Promise<void>
}

/**
 * Lets a session go at its deadline, while its function (`running`) may still use it:
 * abandoned at once where the store can fence off the function's late writes (see
 * `Session.abandon`), else rolled back as soon as the function settles, and never
 * committed, since its caller was told it failed.
 * @returns true when the session ended at once, false when it ends with the function
 * @example const freed = await letGo(session, running)
 */
export async function letGo(session: HeldSession, running: PromiseLike<unknown>): Promise<boolean> {
  if (session.abandon !== undefined) {
    await session.abandon()
    return true
  }
  const end = (): Promise<void> => session.rollback()
  running.then(end, end)
  return false
}
