// The stores' entry points in package.json ("exports" and "typesVersions"), written from
// the registry (src/stores/registry.ts, as built in dist/): each store's subpath
// (`./postgres`) with its ESM types, the CommonJS twin under "require"
// (tools/cjs-declarations.mjs writes the .d.cts) and its typesVersions line. Entry points
// that are not a store folder's (`.`, `./encrypted`, `./hono`…) are written by hand and
// left as they are.
//
//   node tools/exports.mjs           rewrite package.json's store entries (after npm run build)
//   node tools/exports.mjs --check   exit 1, naming each difference, when package.json is not what it would write
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

const root = new URL('..', import.meta.url).pathname
const check = process.argv.includes('--check')
const built = join(root, 'dist/stores/registry.js')
if (!existsSync(built)) {
  console.error('tools/exports.mjs: dist/stores/registry.js is missing\n  fix: npm run build, then run node tools/exports.mjs again')
  process.exit(2)
}
const { STORES } = await import(pathToFileURL(built).href)
const file = join(root, 'package.json')
const text = readFileSync(file, 'utf8')
const pkg = JSON.parse(text)

/** A store folder's entry point, as every subpath of the package is written. */
function exportOf(module) {
  const types = module.replace(/\.js$/, '.d.ts')
  return { require: { types: module.replace(/\.js$/, '.d.cts'), default: module }, types, default: module }
}

// A store folder's entry (./dist/stores/<folder>/…): the registry's to write.
const isStores = (target) => typeof target === 'object' && target !== null && /^\.\/dist\/stores\/[^/]+\//.test(target.default ?? '')
const isStoresTypes = (paths) => Array.isArray(paths) && paths.some((path) => /^dist\/stores\/[^/]+\//.test(path))

/**
 * `object` with the keys `managed` picks replaced by `wanted`'s (in their place; new ones
 * after the last of them), the others kept as they are.
 */
function merged(object, managed, wanted) {
  const keys = Object.keys(object)
  const last = keys.findLastIndex((key) => managed(object[key]) || key in wanted)
  const result = {}
  const add = (key) => (result[key] = wanted[key])
  keys.forEach((key, i) => {
    if (key in wanted) add(key)
    else if (!managed(object[key])) result[key] = object[key]
    if (i === last) for (const fresh of Object.keys(wanted)) if (!(fresh in object)) add(fresh)
  })
  if (last === -1) for (const key of Object.keys(wanted)) add(key)
  return result
}

const exportsWanted = Object.fromEntries(STORES.map((store) => [store.exports.subpath, exportOf(store.exports.module)]))
const typesWanted = Object.fromEntries(STORES.map((store) => [store.exports.subpath.slice(2), [store.exports.module.slice(2).replace(/\.js$/, '.d.ts')]]))
const next = {
  ...pkg,
  exports: merged(pkg.exports, isStores, exportsWanted),
  typesVersions: { ...pkg.typesVersions, '*': merged(pkg.typesVersions['*'], isStoresTypes, typesWanted) },
}
const written = `${JSON.stringify(next, null, 2)}\n`

if (!check) {
  if (written !== text) writeFileSync(file, written)
  console.log(written === text ? 'package.json: the stores\' entry points are current' : 'package.json: the stores\' entry points rewritten from the registry')
  process.exit(0)
}

/** Each difference between what package.json holds and what the registry asks for. */
function differences(field, had, wanted) {
  const found = []
  for (const key of new Set([...Object.keys(had), ...Object.keys(wanted)])) {
    const now = JSON.stringify(had[key])
    const then = JSON.stringify(wanted[key])
    if (now === then) continue
    if (had[key] === undefined) found.push(`${field} lacks "${key}": ${then}`)
    else if (wanted[key] === undefined) found.push(`${field} has "${key}", which no store in the registry names`)
    else found.push(`${field} "${key}" is ${now}; the registry's is ${then}`)
  }
  return found
}
const found = [
  ...differences('package.json "exports"', pkg.exports, next.exports),
  ...differences('package.json "typesVersions"', pkg.typesVersions['*'], next.typesVersions['*']),
]
if (found.length === 0 && written !== text) found.push("package.json's store entry points are out of order")
if (found.length > 0) {
  for (const line of found) console.error(line)
  console.error('  fix: run node tools/exports.mjs')
  process.exit(1)
}
console.log('package.json: the stores\' entry points match the registry')
