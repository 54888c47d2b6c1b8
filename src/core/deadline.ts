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
 * does if it settles in time. When the deadline passes first, `expire` decides: it lets
 * the hold go and returns the promise of the error the call fails with (this rejects
 * with it, and ignores what `work` does afterwards), or, where the hold cannot be let go
 * while `work` runs, returns nothing, and this goes on waiting for `work`.
 * @example
 * const value = await withinDeadline(fn(tx), 30_000, () => session.abandon?.().then(() => new OverranError('…')))
 */
export function withinDeadline<T>(work: PromiseLike<T>, deadlineMs: number, expire: () => Promise<Error> | undefined): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let expired = false
    const timer = setTimeout(() => {
      const letGo = expire()
      if (letGo === undefined) return
      // From here on the call's outcome is the deadline's, whatever `work` does.
      expired = true
      letGo.then(reject, reject)
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
