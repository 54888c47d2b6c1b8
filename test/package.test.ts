// Every entry point resolves the same for every project that imports it: ESM (`import`
// condition: the .d.ts), CommonJS (`require` condition: the .d.cts twin that
// tools/cjs-declarations.mjs writes, describing what require() of the ES module returns),
// and TypeScript's node10 resolution (typesVersions), which ignores "exports". A new
// subpath export that forgets one of them compiles for the repository and fails a Nest
// app; test:install proves the shapes in real projects, this keeps every entry in them.
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'

const root = new URL('..', import.meta.url).pathname
interface Target {
  require?: { types?: string; default?: string }
  types?: string
  default?: string
}
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  exports: Record<string, string | Target>
  typesVersions: Record<string, Record<string, string[]>>
  types: string
  main: string
}

describe('package.json: the entry points', () => {
  for (const [subpath, target] of Object.entries(pkg.exports)) {
    if (subpath === './package.json') continue
    it(`${subpath}: the ESM types, their CommonJS twin under "require", and a typesVersions entry`, () => {
      expect(typeof target, subpath).toBe('object')
      const { types, default: code, require } = target as Target
      expect(types).toMatch(/^\.\/dist\/.+\.d\.ts$/)
      expect(code).toBe(types!.replace(/\.d\.ts$/, '.js'))
      expect(require).toEqual({ types: types!.replace(/\.d\.ts$/, '.d.cts'), default: code })
      // "require" before "types": conditions match in order, and "types" would answer both.
      expect(Object.keys(target)).toEqual(['require', 'types', 'default'])
      for (const file of [types!, code!, require!.types!]) expect(existsSync(join(root, file)), `${file} (npm run build)`).toBe(true)
      if (subpath === '.') expect([pkg.types, pkg.main]).toEqual([types, code])
      else expect(pkg.typesVersions['*']![subpath.slice(2)]).toEqual([types!.slice(2)])
    })
  }

  it('typesVersions names no subpath that "exports" lacks', () => {
    for (const subpath of Object.keys(pkg.typesVersions['*']!)) expect(pkg.exports[`./${subpath}`], subpath).toBeDefined()
  })
})
