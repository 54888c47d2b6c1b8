// #46 item 3, "a store is one folder plus one registry entry": in a copy of the
// repository, a fake store is added the way CONTRIBUTING.md says (its folder, and one line
// in src/stores/registry.ts), nothing else of src/ is touched, and the `idem` command built
// from the copy lists it, takes its flag on the commands its entry names, reaches its
// operator, and prints its mistakes with cause and fix; tools/exports.mjs then asks for
// its package.json entry point, and writes it.
import { execFile } from 'node:child_process'
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CLI_STORES } from '../../src/cli/target.js'
import type { StoreOperator } from '../../src/ports/operator.js'
import { STORES } from '../../src/stores/registry.js'
import { DYNAMODB_URL } from '../support/dynamodb.js'
import { MYSQL_URL } from '../support/mysql.js'
import { PG_URL } from '../support/postgres.js'
import { REDIS_URL } from '../leased/support.js'
import { idem as builtIdem, noStack, root, type Ran } from './support.js'

/** The fake store's operator: its stats say where they come from. */
const FAKE_INDEX = `import type { KeyInspection, StoreOperator, TableStats } from '../../ports/operator.js'

/** A store that keeps nothing: its operator answers with made-up counts. */
export function fakeOperator(name: string): StoreOperator {
  const stats = (windowMs: number): Promise<TableStats> =>
    Promise.resolve({ windowMs, leases: { byState: { held: 7 }, expired: 0, bytes: null }, inbox: { live: 3, expired: 0 }, deadLetters: { total: 0, recent: 0 } })
  const inspect = (scope: string, key: string): Promise<KeyInspection> => Promise.resolve({ scope, key, now: new Date(0).toISOString() })
  return { backend: \`Fake \${name}\`, stats, inspect }
}
`

/** Its entry: the flag, a check of its value, and the operator loaded when a command runs. */
const FAKE_ENTRY = `import { CliError } from '../../core/errors/cli-error.js'
import type { StoreEntry } from '../../ports/store-entry.js'

/** The fake store as the idem command reaches it: --fake <name>. */
export const entry: StoreEntry = {
  name: 'fake',
  title: 'Fake',
  exports: { subpath: './fake', module: './dist/stores/fake/index.js' },
  cli: {
    value: '<name>',
    help: 'a fake store, named by lower-case letters',
    commands: ['stats', 'inspect'],
    target: (name) => {
      if (!/^[a-z]+$/.test(name)) throw new CliError(\`--fake \${JSON.stringify(name)} is not a fake store's name\`, 'pass lower-case letters, such as --fake x')
      return {
        flags: \`--fake \${name}\`,
        secrets: [],
        withOperator: async (_access, work) => work((await import('./index.js')).fakeOperator(name)),
      }
    },
  },
}
`

const REGISTRY_LINE = "  import('./fake/entry.js'),"

const run = (file: string, args: string[], cwd: string): Promise<Ran> =>
  new Promise((resolve) => {
    execFile(process.execPath, [file, ...args], { cwd, timeout: 120_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr })
    })
  })

/** Every file under `dir`, relative to it. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name).slice(dir.length + 1))
    .sort()
}

describe('a store is its folder plus one line in src/stores/registry.ts', () => {
  const copy = mkdtempSync(join(tmpdir(), 'idem-registry-'))
  const idem = (...args: string[]) => run(join(copy, 'dist/cli/idem.js'), args, copy)
  const exportsTool = (...args: string[]) => run(join(copy, 'tools/exports.mjs'), args, copy)
  afterAll(() => rmSync(copy, { recursive: true, force: true }))

  beforeAll(async () => {
    cpSync(join(root, 'src'), join(copy, 'src'), { recursive: true })
    for (const file of ['tsconfig.json', 'package.json', 'tools/exports.mjs']) cpSync(join(root, file), join(copy, file))
    symlinkSync(join(root, 'node_modules'), join(copy, 'node_modules'))
    mkdirSync(join(copy, 'src/stores/fake'))
    writeFileSync(join(copy, 'src/stores/fake/index.ts'), FAKE_INDEX)
    writeFileSync(join(copy, 'src/stores/fake/entry.ts'), FAKE_ENTRY)
    const registry = join(copy, 'src/stores/registry.ts')
    const text = readFileSync(registry, 'utf8')
    const last = "  import('./dynamodb/entry.js'),\n"
    expect(text).toContain(last)
    writeFileSync(registry, text.replace(last, `${last}${REGISTRY_LINE}\n`))
    const built = await run(join(root, 'node_modules/typescript/bin/tsc'), ['-p', join(copy, 'tsconfig.json')], copy)
    expect(built, 'the copy compiles').toMatchObject({ code: 0, stderr: '' })
  })

  it('differs from src/ only in the fake folder and the registry line', () => {
    const ours = filesUnder(join(root, 'src'))
    const theirs = filesUnder(join(copy, 'src'))
    expect(theirs.filter((file) => !ours.includes(file))).toEqual(['stores/fake/entry.ts', 'stores/fake/index.ts'])
    expect(ours.filter((file) => !theirs.includes(file))).toEqual([])
    const changed = ours.filter((file) => readFileSync(join(root, 'src', file), 'utf8') !== readFileSync(join(copy, 'src', file), 'utf8'))
    expect(changed).toEqual(['stores/registry.ts'])
    const before = readFileSync(join(root, 'src/stores/registry.ts'), 'utf8').split('\n')
    const after = readFileSync(join(copy, 'src/stores/registry.ts'), 'utf8').split('\n')
    expect(after.filter((line) => !before.includes(line))).toEqual([REGISTRY_LINE])
    expect(after.length).toBe(before.length + 1)
  })

  it("keeps the import rules: the fake store's folder imports the ports and core/errors only", async () => {
    const config = join(root, '.dependency-cruiser.cjs')
    const cruised = await run(join(root, 'node_modules/dependency-cruiser/bin/dependency-cruise.mjs'), ['src', '--config', config, '--output-type', 'json'], copy)
    const { summary } = JSON.parse(cruised.stdout) as { summary: { violations: unknown[]; totalCruised: number } }
    expect(summary.violations).toEqual([])
    expect(cruised.code).toBe(0)
  })

  it('the CLI lists it, with its flag and the commands that take it', async () => {
    const stores = await idem('stores')
    expect(stores.code).toBe(0)
    expect(stores.stdout).toMatch(/^ {2}fake +--fake <name> +stats inspect; import from idem\/fake$/m)
    const json = JSON.parse((await idem('stores', '--json')).stdout) as { name: string }[]
    expect(json.find((store) => store.name === 'fake')).toEqual({ name: 'fake', title: 'Fake', flag: '--fake <name>', options: [], commands: ['stats', 'inspect'], module: 'idem/fake' })
    expect((await idem('--help')).stdout).toContain('--dynamodb, --fake (idem stores')
    expect((await idem('stats', '--help')).stdout).toContain('--fake <name>')
  })

  it('idem stats --fake x reaches the fake operator', async () => {
    const stats = await idem('stats', '--fake', 'x')
    expect(stats).toMatchObject({ code: 0, stderr: '' })
    expect(stats.stdout).toContain('idem stats for --fake x, window 1.0 d')
    expect(stats.stdout).toContain('leases      held 7, free 0, completed 0')
    expect(stats.stdout).toContain('inbox       3 ids kept')
    const inspect = await idem('inspect', 'acct', 'order-1', '--fake', 'x', '--json')
    expect(inspect.code, 'nothing stored: exit 1').toBe(1)
    expect(JSON.parse(inspect.stdout)).toEqual({ scope: 'acct', key: 'order-1', now: '1970-01-01T00:00:00.000Z', found: false })
  })

  it("prints its entry's mistakes with cause and fix, and its flag only where its entry lists the command", async () => {
    expect(await idem('stats', '--fake', 'X Y')).toMatchObject({ code: 2, stdout: '', stderr: 'idem stats: --fake "X Y" is not a fake store\'s name\n  fix: pass lower-case letters, such as --fake x\n' })
    expect((await idem('stats')).stderr).toContain('fix: pass exactly one of --postgres <url> or --sqlite <file> or --mysql <url> or --dynamodb <table> or --fake <name>')
    expect((await idem('stats', '--fake', 'x', '--sqlite', 'app.db')).stderr).toContain('idem stats: --sqlite and --fake given together')
    expect((await idem('migrate', '--fake', 'x')).stderr).toContain("idem: unknown option '--fake'")
  })

  it('tools/exports.mjs --check asks for its package.json entry point; tools/exports.mjs writes it', async () => {
    const checked = await exportsTool('--check')
    expect(checked.code).toBe(1)
    expect(checked.stderr).toContain('package.json "exports" lacks "./fake"')
    expect(checked.stderr).toContain('package.json "typesVersions" lacks "fake"')
    expect(checked.stderr).toContain('fix: run node tools/exports.mjs')
    expect(await exportsTool()).toMatchObject({ code: 0 })
    expect(await exportsTool('--check')).toMatchObject({ code: 0 })
    const pkg = JSON.parse(readFileSync(join(copy, 'package.json'), 'utf8')) as { exports: Record<string, unknown>; typesVersions: { '*': Record<string, string[]> } }
    const ours = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as typeof pkg
    expect(pkg.exports['./fake']).toEqual({
      require: { types: './dist/stores/fake/index.d.cts', default: './dist/stores/fake/index.js' },
      types: './dist/stores/fake/index.d.ts',
      default: './dist/stores/fake/index.js',
    })
    expect(pkg.typesVersions['*'].fake).toEqual(['dist/stores/fake/index.d.ts'])
    // Nothing else moved: every other entry point is as it was, in its place.
    const { './fake': _, ...others } = pkg.exports
    expect(others).toEqual(ours.exports)
    expect(Object.keys(pkg.exports).filter((key) => key !== './fake')).toEqual(Object.keys(ours.exports))
  })
})

describe('the registry loads no driver', () => {
  const peers = STORES.flatMap((store) => (store.peer === undefined ? [] : [store.peer]))
  const hideAll = { node: ['--import', join(root, 'test/cli/fixtures/hide-module.mjs')], env: { IDEM_HIDE_MODULE: peers.join(',') } }

  it.each([[['--help']], [['stores']], [['sql', 'postgres']], [['migrate', '--help']]])('idem %j runs with no driver installed', async (args) => {
    expect(peers).toEqual(expect.arrayContaining(['pg', 'better-sqlite3', 'mysql2', 'ioredis', '@aws-sdk/client-dynamodb']))
    const ran = await builtIdem(args, hideAll)
    expect(ran).toMatchObject({ code: 0, stderr: '' })
  })

  it('a command loads the driver of the store it reaches, and says which to install', async () => {
    const ran = await builtIdem(['inspect', 's', 'k', '--mysql', 'mysql://127.0.0.1/app'], hideAll)
    expect(ran).toMatchObject({ code: 2, stdout: '', stderr: 'idem inspect: the MySQL driver "mysql2" is not installed\n  fix: npm i mysql2\n' })
    noStack(ran)
  })
})

describe("each store's entry names the commands its operator serves", () => {
  const dir = mkdtempSync(join(tmpdir(), 'idem-registry-operators-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))
  // The flag's value for each bundled store, on the servers the tests run on: a store added
  // to the registry adds its line here.
  const given: Record<string, [value: string, flags: Record<string, string>]> = {
    postgres: [PG_URL, { schema: 'public' }],
    // A dry run reads a file that is not there as an empty database, and makes none.
    sqlite: [join(dir, 'none.db'), {}],
    mysql: [MYSQL_URL, {}],
    redis: [REDIS_URL, { prefix: 'idem:' }],
    dynamodb: ['idem_registry', { endpoint: DYNAMODB_URL, region: 'us-east-1' }],
  }

  it.each(CLI_STORES.map((store) => [store.name, store] as const))('%s', async (name, store) => {
    expect(given[name], `a flag value for ${name} in this test`).toBeDefined()
    const [value, flags] = given[name]!
    const operator = await store.cli.target(value, flags).withOperator({ dryRun: true }, (found: StoreOperator) => Promise.resolve(found))
    const serves = (command: string): boolean => store.cli.commands.some((listed) => listed === command)
    expect({ migrate: serves('migrate'), stats: serves('stats'), uninstall: serves('uninstall'), reconcile: serves('reconcile') }).toEqual({
      migrate: operator.migrations !== undefined,
      stats: operator.stats !== undefined,
      uninstall: operator.uninstall !== undefined,
      reconcile: operator.sql !== undefined,
    })
    expect(serves('inspect')).toBe(true)
    // What `idem sql` prints is the version `idem migrate` brings the store to.
    if (store.cli.sql !== undefined) expect(store.cli.sql.latest).toBe(operator.migrations?.latest)
  })
})
