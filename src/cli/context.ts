import type { CliIo } from './io.js'

/** What every command's action gets: where to write, and how to set the exit code. */
export interface CommandContext {
  io: CliIo
  exit(code: number): void
}

/** `--json` output: one object on one line. */
export function printJson(io: CliIo, value: unknown): void {
  io.out(JSON.stringify(value))
}
