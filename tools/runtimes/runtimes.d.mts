// Types of tools/runtimes/runtimes.mjs, for the tests that use it (test/runtimes).

export type RuntimeName = 'bun' | 'deno'

/** A runtime found on disk, and how to start a program on it. */
export interface Runtime {
  name: RuntimeName
  label: string
  /** Its `--version` line. */
  version: string
  /** The binary and its flags: the program's path goes next, then its arguments. */
  argv: string[]
  /** The same for a module whose default export's `fetch` the runtime serves on `port` (Bun: on the export's own `port`). */
  serveArgv(port: number): string[]
  /** The environment to start it with: the caller's own plus the runtime's quiet switches. */
  env: NodeJS.ProcessEnv
}

/** A runtime that is not there: why, and how to get it. */
export interface MissingRuntime {
  name: RuntimeName
  label: string
  problem: string
  hint: string
}

export function locateRuntime(name: RuntimeName): Runtime | MissingRuntime
