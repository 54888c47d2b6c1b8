// What every script of subpaths.test.ts does alike: read its configuration (one JSON
// argument, from the Node test) and print its one line of result, which the test asserts.
import { RESULT_PREFIX, type ScriptConfig } from './results.js'

/** The configuration the Node test passed as the one argument. */
export function scriptConfig(): ScriptConfig {
  const argument = process.argv[2]
  if (argument === undefined) throw new Error('started without its configuration: run by test/runtimes/subpaths.test.ts')
  return JSON.parse(argument) as ScriptConfig
}

/** `config[name]`, which this script needs. */
export function required<K extends keyof ScriptConfig>(config: ScriptConfig, name: K): NonNullable<ScriptConfig[K]> {
  const value = config[name]
  if (value === undefined) throw new Error(`the configuration has no ${name}`)
  return value as NonNullable<ScriptConfig[K]>
}

/**
 * Runs `work` and prints what it resolves with as the result line, then exits (0); a
 * failure prints its stack on stderr and exits 1. Exiting ends what a failed run left
 * open (a Redis connection, a consumer's read loop).
 */
export async function reportResult(work: () => Promise<unknown>): Promise<never> {
  try {
    const result = await work()
    process.stdout.write(`${RESULT_PREFIX}${JSON.stringify(result)}\n`)
    process.exit(0)
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
    process.exit(1)
  }
}
