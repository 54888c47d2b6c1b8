/**
 * Waits `ms` milliseconds, or rejects with the signal's reason as soon as it aborts, so
 * a caller's cancel is never held up by a backoff sleep.
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason)
      return
    }
    const onAbort = (): void => {
      clearTimeout(timer)
      reject(signal?.reason)
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}

/**
 * Makes `target` abort when `source` does, and returns a function that undoes the link.
 * Written by hand rather than with `AbortSignal.any` so the listener is removed as soon
 * as an attempt ends: a long-lived caller signal shared by many calls must not collect
 * one listener per call.
 */
export function linkSignal(source: AbortSignal | undefined, target: AbortController): () => void {
  if (source === undefined) return () => {}
  if (source.aborted) {
    target.abort(source.reason)
    return () => {}
  }
  const onAbort = (): void => target.abort(source.reason)
  source.addEventListener('abort', onAbort, { once: true })
  return () => source.removeEventListener('abort', onAbort)
}

/**
 * Settles with `promise`, or rejects with the signal's reason as soon as it aborts, so
 * a cancel is immediate even when the awaited work (a stream that never ends, a custom
 * `fetch` that ignores its signal) would not notice it.
 */
export function abortable<T>(promise: Promise<T>, signal: AbortSignal | null | undefined): Promise<T> {
  if (!signal) return promise
  if (signal.aborted) return Promise.reject(signal.reason)
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason)
    signal.addEventListener('abort', onAbort, { once: true })
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort)
        resolve(value)
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort)
        reject(error)
      },
    )
  })
}
