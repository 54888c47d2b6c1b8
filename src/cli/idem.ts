#!/usr/bin/env node
import { realpathSync } from 'node:fs'
import { createRequire } from 'node:module'
import { pathToFileURL } from 'node:url'
import { Command, CommanderError } from 'commander'
import { CliError } from '../core/errors/cli-error.js'
import { reason, unquoted } from '../core/errors/credentials.js'
import type { CommandContext } from './context.js'
import { registerInspect } from './inspect.js'
import { consoleIo, EXIT, type CliIo } from './io.js'
import { registerMigrate } from './migrate.js'
import { registerPolicy } from './policy.js'
import { registerPrune } from './prune.js'
import { registerReconcile } from './reconcile.js'
import { registerSql } from './sql.js'
import { registerStats } from './stats.js'
import { registerStores } from './stores.js'
import { CLI_STORES } from './target.js'
import { registerUninstall } from './uninstall.js'

const { version } = createRequire(import.meta.url)('../../package.json') as { version: string }

/** The `idem` program, writing to `io`; what commander quotes of `argv` (an unknown `--postgress=<url>`) loses its credentials. */
export function program(io: CliIo, exit: (code: number) => void, argv: readonly string[] = []): Command {
  // io.out and io.err add the line break commander already wrote.
  const line = (write: (line: string) => void) => (text: string) => write(text.replace(/\n$/, ''))
  const idem = new Command('idem')
    .description('Operate idem: migrate, prune, inspect and count its tables, reconcile your own, and uninstall it.')
    .version(version, '-V, --version', "print idem's version")
    .helpOption('-h, --help', 'show help for a command')
    .exitOverride()
    .configureOutput({ writeOut: line(io.out), writeErr: line(io.err), outputError: (text, write) => write(unquoted(text.replace(/^error: /, 'idem: '), argv)) })
    .showSuggestionAfterError(true)
    .showHelpAfterError('(run idem <command> --help for its options and an example)')
    .addHelpText(
      'after',
      `
Stores: ${CLI_STORES.map((store) => `--${store.name}`).join(', ')} (idem stores lists what each serves).
Exit codes: 0 ok; 1 the answer is no (reconcile above its threshold, inspect found no key); 2 a usage, connection or setup error.
Docs: docs/operating.md`,
    )
  const context: CommandContext = { io, exit }
  registerMigrate(idem, context)
  registerSql(idem, context)
  registerPrune(idem, context)
  registerInspect(idem, context)
  registerStats(idem, context)
  registerReconcile(idem, context)
  registerPolicy(idem, context)
  registerUninstall(idem, context)
  registerStores(idem, context)
  for (const command of idem.commands) command.showHelpAfterError(`(run idem ${command.name()} --help for its options and an example)`)
  return idem
}

/**
 * The `idem` command: parses `argv` (without `node` and the script), runs the command,
 * and returns the exit code. Mistakes print their cause and fix, never a stack trace.
 * @returns 0 ok, 1 the answer is "no", 2 a usage, connection or setup error
 * @example process.exitCode = await main(['migrate', '--sqlite', 'app.db'])
 */
export async function main(argv: string[], io: CliIo = consoleIo()): Promise<number> {
  let code: number = EXIT.ok
  const idem = program(io, (exitCode) => (code = exitCode), argv)
  if (argv.length === 0) {
    io.err(idem.helpInformation().replace(/\n$/, ''))
    return EXIT.usage
  }
  try {
    await idem.parseAsync(argv, { from: 'user' })
    return code
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and --version are answers; everything else commander refuses, it has printed.
      return error.code === 'commander.helpDisplayed' || error.code === 'commander.version' || error.code === 'commander.help' ? EXIT.ok : EXIT.usage
    }
    const name = argv.find((arg) => !arg.startsWith('-')) ?? ''
    if (error instanceof CliError) io.err(`idem ${name}: ${error.message}\n  fix: ${error.fix}`)
    // A CliError shows its connection string masked; any other error is a driver's or a store's words.
    else io.err(`idem ${name}: ${reason(error, argv)}`)
    return EXIT.usage
  }
}

/**
 * `idem reconcile`, callable on its own, for jobs that run it in-process.
 * @returns the exit code (`EXIT`)
 * @example await reconcileCommand(['--sqlite', 'app.db', '--table', 'summaries', '--columns', 'intake_id,prompt_version'])
 * @see docs/data.md
 */
export function reconcileCommand(argv: string[], io?: CliIo): Promise<number> {
  return main(['reconcile', ...argv], io)
}

// Run as a program; importing it (in tests) runs nothing.
if (isMain()) {
  // `idem sql postgres | head` closes the pipe early: that is not an error of the command.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0)
    throw error
  })
  process.exitCode = await main(process.argv.slice(2))
}

function isMain(): boolean {
  try {
    return process.argv[1] !== undefined && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href
  } catch {
    return false // argv[1] is not a file: a REPL, `node -e`, a test runner
  }
}
