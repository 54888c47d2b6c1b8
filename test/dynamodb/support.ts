// What the DynamoDB hold tests share: a guard that fails a wait that never ends instead
// of hanging the file, and a gate a holder waits on until the test lets it go.

/** Rejects when `work` has not settled within `ms`, so a wait that never ends fails the test instead of hanging it. */
export function within<T>(ms: number, work: Promise<T>, what = 'still waiting'): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} after ${ms} ms`)), ms)
  })
  return Promise.race([work, late]).finally(() => clearTimeout(timer))
}

/** A gate: `passed` settles once `open()` is called, and never before. */
export function gate(): { readonly passed: Promise<void>; open(): void } {
  let open!: () => void
  const passed = new Promise<void>((resolve) => (open = resolve))
  return { passed, open }
}
