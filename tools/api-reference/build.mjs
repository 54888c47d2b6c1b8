// Builds the API reference, Markdown pages in docs/api/ (committed, and shipped in the
// package), with TypeDoc from the entry points the root package.json exports, so a new
// subpath export is documented (and checked) without editing this tool. TypeDoc lives in
// this folder's own package because it needs the TypeScript compiler API, which
// typescript 7 (the project's compiler) does not have.
//
//   node tools/api-reference/build.mjs           writes docs/api/
//   node tools/api-reference/build.mjs --check   builds into a temporary folder and fails,
//                                                naming the pages, if docs/api/ differs
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { entryPoints, root } from './entries.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const committed = join(root, 'docs/api')

// Install only when the lock changed since the last install: `npm ci` wipes node_modules.
const lock = readFileSync(join(here, 'package-lock.json'), 'utf8')
const stamp = join(here, 'node_modules/.installed-lock')
if (!existsSync(stamp) || readFileSync(stamp, 'utf8') !== lock) {
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'
  const installed = spawnSync(npm, ['ci', '--prefix', here, '--no-audit', '--no-fund'], { stdio: 'inherit' })
  if (installed.status !== 0) process.exit(installed.status ?? 1)
  writeFileSync(stamp, lock)
}

const check = process.argv.includes('--check')
const out = check ? mkdtempSync(join(tmpdir(), 'idem-api-reference-')) : committed
const sources = entryPoints().map(({ source }) => relative(here, join(root, source)))
const typedoc = join(here, 'node_modules/typedoc/bin/typedoc')
const extra = process.argv.slice(2).filter((arg) => arg !== '--check')
const args = ['--options', join(here, 'typedoc.json'), '--out', out, ...sources.flatMap((entry) => ['--entryPoints', entry]), ...extra]
const built = spawnSync(process.execPath, [typedoc, ...args], { cwd: here, stdio: 'inherit' })
if (built.status !== 0 || !check) process.exit(built.status ?? 1)

/** Every file under `dir`, as paths relative to it. */
function files(dir) {
  if (!existsSync(dir)) return []
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(dir, join(entry.parentPath, entry.name)))
    .sort()
}

const fresh = files(out)
const stale = [...new Set([...fresh, ...files(committed)])].filter((file) => {
  const [now, then] = [join(out, file), join(committed, file)]
  return !existsSync(now) || !existsSync(then) || readFileSync(now, 'utf8') !== readFileSync(then, 'utf8')
})
rmSync(out, { recursive: true, force: true })
if (stale.length > 0) {
  console.error(`docs/api/ is not what the doc comments make today (${stale.length} of ${fresh.length} pages differ):`)
  for (const file of stale) console.error(`  docs/api/${file}`)
  console.error('Run `npm run docs:api` and commit docs/api/.')
  process.exit(1)
}
console.log(`docs/api/ is up to date (${fresh.length} pages).`)
