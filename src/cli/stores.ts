import type { Command } from 'commander'
import type { StoreCommand } from '../ports/store-entry.js'
import { STORES } from '../stores/registry.js'
import { printJson, type CommandContext } from './context.js'
import { CLI_STORES, flagOf, type CliStore } from './target.js'

/** One store as `idem stores` shows it. */
interface StoreLine {
  name: string
  title: string
  /** The flag the commands take, `--postgres <url>`; absent for a store that lives in the process. */
  flag?: string
  /** Its other options: `--schema <name>`. */
  options: string[]
  /** The commands that take its flag, `sql` included where it has a script. */
  commands: (StoreCommand | 'sql')[]
  /** What an app imports it from: `idem/postgres`. */
  module: string
  /** The optional peer dependency it drives: `pg`. */
  peer?: string
}

/**
 * `idem stores`: every store the registry (src/stores/registry.ts) lists, with its flag,
 * the commands that take it, its import path and its driver.
 */
export function registerStores(program: Command, { io }: CommandContext): void {
  program
    .command('stores')
    .summary('list the stores: their flags, the commands that take them, their import and driver')
    .description("Lists every store idem has: the flag that names it on the other commands, the commands that take that flag, the module an app imports it from, and the driver it needs (an optional peer dependency: npm i <driver>).")
    .option('--json', 'print [{ name, title, flag, options, commands, module, peer }] as JSON')
    .addHelpText(
      'after',
      `
Examples:
  $ idem stores
  $ idem stores --json`,
    )
    .action((flags: { json?: boolean }) => {
      const lines = STORES.map(describe)
      if (flags.json) return printJson(io, lines)
      const width = Math.max(...lines.map((line) => (line.flag ?? '').length))
      io.out('idem stores (--<name> on the commands listed; docs/stores.md):')
      for (const line of lines) {
        const flag = (line.flag ?? '').padEnd(width)
        const commands = line.commands.length === 0 ? 'in-process only, no command' : line.commands.join(' ')
        io.out(`  ${line.name.padEnd(10)} ${flag}  ${commands}; import from ${line.module}${line.peer === undefined ? '' : `, driver ${line.peer}`}`)
      }
    })
}

function describe(store: (typeof STORES)[number]): StoreLine {
  const cli = CLI_STORES.find((reached) => reached === store)
  return {
    name: store.name,
    title: store.title,
    ...(cli === undefined ? {} : { flag: flagOf(cli) }),
    options: (store.cli?.options ?? []).map((option) => option.flags),
    commands: cli === undefined ? [] : commandsOf(cli),
    module: `idem${store.exports.subpath.slice(1)}`,
    ...(store.peer === undefined ? {} : { peer: store.peer }),
  }
}

const commandsOf = (store: CliStore): (StoreCommand | 'sql')[] => [...store.cli.commands, ...(store.cli.sql === undefined ? [] : ['sql' as const])]
