import { InvalidArgumentError, Option, type Command } from 'commander'
import { CliError } from '../core/errors/cli-error.js'
import { unquoted } from '../core/errors/credentials.js'
import { IdemError } from '../core/errors/idem-error.js'
import type { StoreCli, StoreCommand, StoreEntry, StoreOption, StoreTarget } from '../ports/store-entry.js'
import { STORES } from '../stores/registry.js'

/**
 * Where a command acts, and how it reaches it: every backend comes from the registry
 * (src/stores/registry.ts), so nothing here names one. A command takes the flag of each
 * store whose entry lists it, and asks the operator what it can do, never which backend it is.
 */

/** A store the `idem` command reaches: its entry, with the CLI part it has. */
export interface CliStore extends StoreEntry {
  readonly cli: StoreCli
}

/** The checked target of a command, with the store it is on. */
export interface Target extends StoreTarget {
  readonly store: CliStore
}

/** Every store the `idem` command reaches, in the registry's order. */
export const CLI_STORES: readonly CliStore[] = STORES.filter((entry): entry is CliStore => entry.cli !== undefined)

/** The stores that take `command`. */
export function storesFor(command: StoreCommand): CliStore[] {
  return CLI_STORES.filter((store) => store.cli.commands.includes(command))
}

/** `--postgres <url>`: a store's flag as help and messages show it. */
export const flagOf = (store: CliStore): string => `--${store.name} ${store.cli.value}`

/** The options of `stores` that apply to `command`, each once, with the stores that read it. */
function optionsFor(stores: readonly CliStore[], command: StoreCommand): Map<string, { option: StoreOption; owners: CliStore[] }> {
  const options = new Map<string, { option: StoreOption; owners: CliStore[] }>()
  for (const store of stores) {
    for (const option of store.cli.options ?? []) {
      if (option.commands !== undefined && !option.commands.includes(command)) continue
      const known = options.get(option.flags)
      if (known === undefined) options.set(option.flags, { option, owners: [store] })
      else known.owners.push(store)
    }
  }
  return options
}

/** Adds the flag of every store that serves `name`, and the stores' options for it. */
export function withTargetOptions(command: Command, name: StoreCommand): Command {
  const stores = storesFor(name)
  for (const store of stores) command.option(flagOf(store), store.cli.help)
  for (const { option } of optionsFor(stores, name).values()) command.addOption(commanderOption(option))
  return command
}

function commanderOption({ flags, help, default: fallback, choices, parse }: StoreOption): Option {
  const option = new Option(flags, help)
  if (choices !== undefined) option.choices(choices)
  if (parse !== undefined) {
    option.argParser((value: string) => {
      try {
        return parse(value)
      } catch (error) {
        throw new InvalidArgumentError((error as Error).message)
      }
    })
  }
  if (fallback !== undefined) option.default(fallback)
  return option
}

/**
 * The one target the flags of `command` (a command acting on stores, `name`) name,
 * checked before anything connects.
 * @throws CliError when none or several are given, a value is malformed, or an option belongs to another store
 */
export function targetOf(command: Command, name: StoreCommand): Target {
  const flags = command.opts<Record<string, unknown>>()
  const stores = storesFor(name)
  const given = stores.filter((store) => typeof flags[attribute(store)] === 'string')
  if (given.length !== 1) {
    const choices = stores.map(flagOf).join(' or ')
    throw new CliError(given.length === 0 ? 'no database given' : `${given.map((store) => `--${store.name}`).join(' and ')} given together`, `pass exactly one of ${choices}`)
  }
  const store = given[0]!
  refuseOthersOptions(command, store, optionsFor(stores, name))
  return { ...store.cli.target(String(flags[attribute(store)]), flags), store }
}

const attribute = (store: CliStore): string => new Option(flagOf(store)).attributeName()

/** An option given on the command line that only other stores read: `--key-layout` with `--sqlite`. */
function refuseOthersOptions(command: Command, store: CliStore, options: ReturnType<typeof optionsFor>): void {
  for (const { option, owners } of options.values()) {
    if (owners.includes(store)) continue
    const read = new Option(option.flags)
    if (command.getOptionValueSource(read.attributeName()) !== 'cli') continue
    throw new CliError(`${read.long} applies to ${owners.map((owner) => owner.title).join(' and ')} only`, `drop ${read.long}, or pass ${owners.map(flagOf).join(' or ')}`)
  }
}

/** An idem error from a store (unavailable, tables missing), as cause and fix. */
export function storeError(error: unknown, target: Target): unknown {
  const missing = (cause: unknown): unknown => target.missing?.(cause) ?? cause
  if (error instanceof IdemError) {
    if (error.code === 'migration-required') return missing(error)
    if (error.code === 'store-unavailable') return new CliError(unquoted(error.message, target.secrets), 'check that the database is running and reachable, then run the command again', { cause: error })
    return error
  }
  if (target.store.cli.tablesMissing?.(error) === true) return missing(error)
  return error
}
