#!/usr/bin/env node
import { realpathSync } from 'node:fs'
import { pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import { migrations } from '../stores/postgres/migrations.js'
import { sqliteMigrations } from '../stores/sqlite/migrations.js'
import { EXIT, type CliIo } from './io.js'
import { reconcileCommand } from './reconcile.js'
import { policyCommand } from './policy.js'
import { parseFlags } from './args.js'
import { storeTarget, withStore } from './store-target.js'

const USAGE = `usage: idem <command> [options]

commands:
  migrate   (--postgres <url> [--schema <name>] | --sqlite <file>)
            create or upgrade idem's tables (versioned; safe to run from many instances)
  prune     (--postgres <url> [--schema <name>] | --sqlite <file>) [--batch-size <n>]
            delete expired keys in bounded batches
  sql       (postgres [--schema <name>] | sqlite)
            print every migration's SQL, for DBAs who apply it themselves
  reconcile (--postgres <url> | --sqlite <file>) --table <name> --columns <a,b,...>
            report rows that should be unique but are not; exit 1 above --threshold
  policy    --config <module> [--format md|html|json]
            print your API's idempotency policy from the middleware options

Exit codes: 0 ok, 1 reconcile threshold exceeded, 2 usage or connection error.`

const STORE_OPTIONS = {
  postgres: { type: 'string' },
  sqlite: { type: 'string' },
  schema: { type: 'string' },
  'batch-size': { type: 'string' },
} as const

/**
 * The `idem` command.
 * @returns the exit code
 * @example await main(['migrate', '--sqlite', 'app.db'])
 */
export async function main(argv: string[], io: CliIo = { out: console.log, err: console.error }): Promise<number> {
  const [command, ...rest] = argv
  switch (command) {
    case 'migrate':
    case 'prune':
      return storeCommand(command, rest, io)
    case 'sql':
      return sqlCommand(rest, io)
    case 'reconcile':
      return reconcileCommand(rest, io)
    case 'policy':
      return policyCommand(rest, io)
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      io.out(USAGE)
      return command === undefined ? EXIT.usage : EXIT.ok
    default:
      io.err(`idem: unknown command ${JSON.stringify(command)}\n\n${USAGE}`)
      return EXIT.usage
  }
}

async function storeCommand(command: 'migrate' | 'prune', argv: string[], io: CliIo): Promise<number> {
  const values = parseFlags(argv, STORE_OPTIONS, USAGE, io)
  if (typeof values === 'number') return values
  const target = storeTarget(values, io, USAGE)
  if (target === undefined) return EXIT.usage
  const batchSize = values['batch-size'] === undefined ? 1_000 : Number(values['batch-size'])
  try {
    await withStore(target, async (store) => {
      if (command === 'migrate') {
        const { from, to, applied } = (await store.migrate()) as { from: number; to: number; applied: number[] }
        io.out(applied.length === 0 ? `idem: schema already at version ${to}` : `idem: migrated from version ${from} to ${to} (applied ${applied.join(', ')})`)
      } else {
        io.out(`idem: pruned ${await store.prune({ batchSize })} expired keys`)
      }
    })
  } catch (error) {
    io.err(`idem ${command}: ${(error as Error).message}`)
    return EXIT.usage
  }
  return EXIT.ok
}

function sqlCommand(argv: string[], io: CliIo): number {
  const { values, positionals } = parseArgs({ args: argv, options: { schema: { type: 'string' } }, allowPositionals: true, strict: false })
  const dialect = positionals[0]
  if (dialect === 'postgres') {
    const schema = typeof values.schema === 'string' ? values.schema : 'public'
    for (const migration of migrations) {
      io.out(`-- version ${migration.version}: ${migration.description}`)
      for (const statement of migration.up(schema)) io.out(`${statement};\n`)
    }
    return EXIT.ok
  }
  if (dialect === 'sqlite') {
    for (const migration of sqliteMigrations) {
      io.out(`-- version ${migration.version}: ${migration.description}`)
      for (const statement of migration.up) io.out(`${statement};\n`)
    }
    return EXIT.ok
  }
  io.err(`idem sql: name a dialect, postgres or sqlite\n\n${USAGE}`)
  return EXIT.usage
}

// Run as a program; importing it (in tests) runs nothing.
if (isMain()) process.exitCode = await main(process.argv.slice(2))

function isMain(): boolean {
  try {
    return process.argv[1] !== undefined && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href
  } catch {
    return false // argv[1] is not a file: a REPL, `node -e`, a test runner
  }
}
