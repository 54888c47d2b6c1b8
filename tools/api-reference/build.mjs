// Builds the API reference into docs/api/ with TypeDoc, from the entry points the root
// package.json exports, so a new subpath export is documented (and checked) without
// editing this tool. TypeDoc lives in this folder's own package because it needs the
// TypeScript compiler API, which typescript 7 (the project's compiler) does not have.
import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const root = join(here, '../..')

// Install only when the lock changed since the last install: `npm ci` wipes node_modules.
const lock = readFileSync(join(here, 'package-lock.json'), 'utf8')
const stamp = join(here, 'node_modules/.installed-lock')
if (!existsSync(stamp) || readFileSync(stamp, 'utf8') !== lock) {
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'
  const installed = spawnSync(npm, ['ci', '--prefix', here, '--no-audit', '--no-fund'], { stdio: 'inherit' })
  if (installed.status !== 0) process.exit(installed.status ?? 1)
  writeFileSync(stamp, lock)
}

/** `./dist/http/hono.d.ts` → `src/http/hono.ts`: the source each export's types are built from. */
function sourceOf(types) {
  const source = types.replace(/^\.\/dist\//, 'src/').replace(/\.d\.ts$/, '.ts')
  if (!existsSync(join(root, source))) throw new Error(`api-reference: no source ${source} for the export types ${types}`)
  return source
}

const { exports } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
const entryPoints = Object.entries(exports)
  .filter(([, target]) => typeof target === 'object' && typeof target.types === 'string')
  .map(([, target]) => relative(here, join(root, sourceOf(target.types))))

const typedoc = join(here, 'node_modules/typedoc/bin/typedoc')
const args = ['--options', join(here, 'typedoc.json'), ...entryPoints.flatMap((entry) => ['--entryPoints', entry]), ...process.argv.slice(2)]
const built = spawnSync(process.execPath, [typedoc, ...args], { cwd: here, stdio: 'inherit' })
process.exit(built.status ?? 1)
