// Which runtime runs the slice, and its own SQLite.
import { spawn } from 'node:child_process'
import type { SqliteHandle } from '../../http/support/backend-kinds.js'

/** The runtime this process runs on. */
export const runtime: 'bun' | 'deno' | 'node' = 'Bun' in globalThis ? 'bun' : 'Deno' in globalThis ? 'deno' : 'node'

/** The runtime's own SQLite module: bun:sqlite on Bun, node:sqlite elsewhere (Deno, Node ≥ 22.16). */
export const ownSqliteModule = runtime === 'bun' ? 'bun:sqlite' : 'node:sqlite'

type SqliteConstructor = new (file: string) => SqliteHandle

/** Opens files with the runtime's own SQLite (not better-sqlite3, a native addon neither Bun nor Deno loads). */
export async function ownSqlite(): Promise<(file: string) => SqliteHandle> {
  // A variable specifier: TypeScript (on Node 20's types) knows neither module.
  const specifier: string = ownSqliteModule
  const module = (await import(specifier)) as { Database?: SqliteConstructor; DatabaseSync?: SqliteConstructor }
  const Driver = module.Database ?? module.DatabaseSync
  if (Driver === undefined) throw new Error(`${specifier} has neither Database nor DatabaseSync`)
  return (file) => new Driver(file)
}

/**
 * Starts `script` on this runtime, with the flags the Node test started this one with
 * (`IDEM_RUNTIME_ARGV`: the binary and its flags, as JSON), passing `config` as one JSON
 * argument, as test/fixtures/*.mjs expect.
 */
export function spawnOnRuntime(script: string, config: unknown) {
  const argv = JSON.parse(process.env.IDEM_RUNTIME_ARGV ?? '[]') as string[]
  if (argv.length === 0) throw new Error('IDEM_RUNTIME_ARGV is not set: the slice is started by test/runtimes/*.test.ts')
  return spawn(argv[0]!, [...argv.slice(1), script, JSON.stringify(config)], { stdio: ['ignore', 'pipe', 'pipe'] })
}
