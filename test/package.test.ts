// Every entry point resolves the same for every project that imports it: ESM (`import`
// condition: the .d.ts), CommonJS (`require` condition: the .d.cts twin that
// tools/cjs-declarations.mjs writes, describing what require() of the ES module returns),
// and TypeScript's node10 resolution (typesVersions), which ignores "exports". A new
// subpath export that forgets one of them compiles for the repository and fails a Nest
// app; test:install proves the shapes in real projects, this keeps every entry in them.
import { execFile } from 'node:child_process'
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, describe, expect, it } from 'vitest'

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

// The stores' entry points are written from the registry (src/stores/registry.ts) by
// tools/exports.mjs: a store whose entry point package.json lacks fails here.
describe("package.json: the stores' entry points are the registry's", () => {
  const run = promisify(execFile)
  const copy = mkdtempSync(join(tmpdir(), 'idem-exports-'))
  afterAll(() => rmSync(copy, { recursive: true, force: true }))

  it('node tools/exports.mjs --check finds package.json current', async () => {
    const { stdout } = await run(process.execPath, [join(root, 'tools/exports.mjs'), '--check'], { cwd: root })
    expect(stdout).toContain("package.json: the stores' entry points match the registry")
  })

  it('names a store entry point package.json lacks, and says to run node tools/exports.mjs', async () => {
    cpSync(join(root, 'tools/exports.mjs'), join(copy, 'tools/exports.mjs'))
    symlinkSync(join(root, 'dist'), join(copy, 'dist'))
    const { './redis': _, ...exports } = pkg.exports
    writeFileSync(join(copy, 'package.json'), `${JSON.stringify({ ...pkg, exports }, null, 2)}\n`)
    const failed = await run(process.execPath, [join(copy, 'tools/exports.mjs'), '--check'], { cwd: copy }).catch((error: { code: number; stderr: string }) => error)
    expect(failed).toMatchObject({ code: 1 })
    expect((failed as { stderr: string }).stderr).toBe(
      'package.json "exports" lacks "./redis": {"require":{"types":"./dist/stores/redis/index.d.cts","default":"./dist/stores/redis/index.js"},"types":"./dist/stores/redis/index.d.ts","default":"./dist/stores/redis/index.js"}\n  fix: run node tools/exports.mjs\n',
    )
  })
})
