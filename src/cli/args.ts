import { parseArgs, type ParseArgsConfig } from 'node:util'
import type { CliIo } from './io.js'

type Options = NonNullable<ParseArgsConfig['options']>
export type Flags<O extends Options> = ReturnType<typeof parseArgs<{ args: string[]; options: O; strict: true }>>['values']

/**
 * Parses a command's flags strictly. `--help` prints the usage; a mistake prints the
 * message and the usage.
 * @returns the flags, or the exit code to end with (0 after --help, 2 after a mistake)
 */
export function parseFlags<O extends Options>(argv: string[], options: O, usage: string, io: CliIo): Flags<O> | 0 | 2 {
  if (argv.includes('--help')) {
    io.out(usage)
    return 0
  }
  try {
    return parseArgs({ args: argv, options, strict: true }).values
  } catch (error) {
    io.err(`${(error as Error).message}\n\n${usage}`)
    return 2
  }
}
