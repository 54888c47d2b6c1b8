import type { CliError } from '../core/errors/cli-error.js'
import type { StoreOperator } from './operator.js'

/**
 * A store as the rest of the toolkit finds it: its name, its public subpath, and (for a
 * store outside the process) what the `idem` command needs of it. Each store folder
 * exports one (`entry.ts`) and `src/stores/registry.ts` lists them, one line each: the
 * CLI, `tools/exports.mjs` (package.json "exports") and the docs read that list, so
 * adding a store touches its folder and that line only. An entry loads no driver: its
 * `cli.target(...).withOperator` imports the driver and the operator when a command runs.
 */
export interface StoreEntry {
  /** The store's name: its flag (`--postgres`), its `idem sql` dialect, its line in `idem stores`. */
  readonly name: string
  /** The backend, for messages: `Postgres`, `SQLite`. */
  readonly title: string
  /** The public entry point: `{ subpath: './postgres', module: './dist/stores/postgres/index.js' }`. */
  readonly exports: { readonly subpath: string; readonly module: string }
  /** The optional peer dependency the store drives, if any: `pg`. */
  readonly peer?: string
  /** What the `idem` command reaches the store with; absent for a store that lives in the process (memory). */
  readonly cli?: StoreCli
}

/** The commands of `idem` that act on a store. */
export type StoreCommand = 'migrate' | 'prune' | 'inspect' | 'stats' | 'uninstall' | 'reconcile'

/** What the `idem` command needs of a backend. */
export interface StoreCli {
  /** The flag's value, as help shows it: `<url>`, `<file>`, `<table>`. */
  readonly value: string
  /** The flag's help. */
  readonly help: string
  /** The options the store adds beside its flag (`--schema`, `--prefix`, `--endpoint`…). */
  readonly options?: readonly StoreOption[]
  /** The commands that take the store's flag; each still asks the operator what it offers. */
  readonly commands: readonly StoreCommand[]
  /**
   * The target the flags name, checked before anything connects: a value that is not one
   * fails here (a `CliError` with its fix), not as a driver's error about a host it made up.
   * @param value the flag's value
   * @param flags the command's options, by their camel-cased names (`schema`, `keyLayout`)
   */
  target(value: string, flags: StoreFlags): StoreTarget
  /** Whether a driver's error says idem's tables are missing (`no such table: idem_keys`). */
  tablesMissing?(error: unknown): boolean
  /** What `idem sql <name>` prints, without a connection; absent where the store has no SQL script. */
  readonly sql?: StoreSql
}

/** One option a store adds to the commands that take its flag. */
export interface StoreOption {
  /** As commander writes it: `--schema <name>`. */
  readonly flags: string
  readonly help: string
  readonly default?: string
  /** The values it takes, where they are few. */
  readonly choices?: readonly string[]
  /** Checks a value, returning it; throws an `Error` saying what is expected. */
  readonly parse?: (value: string) => string
  /** The commands it applies to; every command of the store when absent. */
  readonly commands?: readonly StoreCommand[]
}

/** A command's options, by their camel-cased names. */
export type StoreFlags = Readonly<Record<string, unknown>>

/** How a command reaches its target: read-only, or allowed to create a new database file; a dry run reads a missing file as an empty database. */
export interface StoreAccess {
  readonly?: boolean
  create?: boolean
  dryRun?: boolean
}

/** Where a command acts, checked: what it says of it, and how it connects. */
export interface StoreTarget {
  /** The flags that name the target, for a suggested command line (and `--json`'s `target`): credentials masked, each value quoted for a shell where it needs it. */
  readonly flags: string
  /** The connection strings given, whose credentials no message may quote. */
  readonly secrets: readonly string[]
  /** The error for idem's tables missing there, or older than this idem, with its fix; absent where the store keeps none (Redis). */
  missing?(cause: unknown): CliError
  /**
   * Loads the driver (a missing optional peer is a `CliError` saying `npm i <pkg>`),
   * connects, runs `work` with the store's operator, and disconnects.
   */
  withOperator<T>(access: StoreAccess, work: (operator: StoreOperator) => Promise<T>): Promise<T>
}

/** What `idem sql` prints for one SQL store, without a connection. */
export interface StoreSql {
  /** The version the script brings a database to. */
  readonly latest: number
  /** Whether its tables live in a named schema (`--schema`). */
  readonly schemas: boolean
  /**
   * Whether the script runs as one transaction (Postgres, SQLite). MySQL commits each DDL
   * statement as it runs it: its script takes a named lock instead, and every statement
   * can run again.
   */
  readonly atomic: boolean
  /**
   * The statement delimiter the database's command-line client must be set to, where a
   * statement holds `;` (MySQL's routines: `DELIMITER $$`); `;` when absent.
   */
  readonly delimiter?: string
  /** Every statement from version `from` to `latest`, recording each version (in one transaction where `atomic`). */
  script(from: number, schema: string): string[]
}
