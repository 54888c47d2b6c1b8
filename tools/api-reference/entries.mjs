// The public entry points, read from the root package.json's "exports": each one's import
// specifier and the source its types are built from. build.mjs hands the sources to
// TypeDoc; plugin.mjs names each documented module by its specifier.
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

export const root = join(dirname(fileURLToPath(import.meta.url)), '../..')

/** `./dist/http/adapters/hono/index.d.ts` → `src/http/adapters/hono/index.ts`: the source each export's types are built from. */
function sourceOf(types) {
  const source = types.replace(/^\.\/dist\//, 'src/').replace(/\.d\.ts$/, '.ts')
  if (!existsSync(join(root, source))) throw new Error(`api-reference: no source ${source} for the export types ${types}`)
  return source
}

/** Every subpath export with types: `{ specifier: 'idem/hono', source: 'src/http/adapters/hono/index.ts' }`. */
export function entryPoints() {
  const { exports } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
  return Object.entries(exports)
    .filter(([, target]) => typeof target === 'object' && typeof target.types === 'string')
    .map(([subpath, target]) => ({ specifier: subpath === '.' ? 'idem' : `idem/${subpath.slice(2)}`, source: sourceOf(target.types) }))
}
