/** Where the command writes: the console by default, a buffer in tests. */
export interface CliIo {
  out(line: string): void
  err(line: string): void
  /**
   * Redraws one status line (a progress bar), present only when that line goes to a
   * terminal; `undefined` ends it. Without it, long commands print one summary line.
   */
  progress?: ((line: string | undefined) => void) | undefined
}

/** Exit codes, so schedulers and CI can tell an alert from a mistake. */
export const EXIT = {
  ok: 0,
  /** The answer is "no": reconcile found duplicates above its threshold, inspect found no such key. */
  exceeded: 1,
  /** A usage, connection or setup error: the message says what and how to fix it. */
  usage: 2,
} as const

/** The console, with a progress line on stderr when stderr is a terminal. */
export function consoleIo(): CliIo {
  const tty = process.stderr.isTTY === true
  return {
    out: (line) => process.stdout.write(`${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`),
    progress: tty ? (line) => process.stderr.write(line === undefined ? '\n' : `\r\x1b[K${line}`) : undefined,
  }
}
