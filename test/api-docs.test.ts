// Every export of every public entry point (package.json "exports") has a JSDoc summary,
// and every exported function and class (error classes aside: their summary says when they
// are thrown) an @example: the doc comments are the
// API reference, so a missing one fails the build. Read from the built .d.ts files,
// which keep the comments, so this checks exactly what users see.
import { existsSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { declarationOf, entryPoints, exportedNames } from './support/declarations.js'

const entries = entryPoints.map(({ specifier, file }) => [specifier, file] as const)

describe('the API reference (doc comments of every public export)', () => {
  it('builds first: dist/ holds every entry point', () => {
    for (const [, file] of entries) expect(existsSync(file), file).toBe(true)
  })

  for (const [specifier, file] of entries) {
    it(`${specifier}: every export has a summary, every function and class an @example`, () => {
      const problems: string[] = []
      for (const name of exportedNames(file)) {
        const found = declarationOf(file, name)
        if (found === undefined) {
          problems.push(`${name}: declaration not found`)
          continue
        }
        const summary = found.doc
          ?.replace(/^\/\*\*|\*\/$/g, '')
          .split('\n')
          .map((line) => line.replace(/^\s*\*\s?/, '').trim())
          .find((line) => line !== '' && !line.startsWith('@'))
        if (summary === undefined) problems.push(`${name} (${found.kind}): no summary`)
        else if ((found.kind === 'function' || (found.kind === 'class' && !name.endsWith('Error'))) && !found.doc!.includes('@example')) {
          problems.push(`${name} (${found.kind}): no @example`)
        }
      }
      if (problems.length > 0) throw new Error(`${problems.length} exports lack docs:\n${problems.join('\n')}`)
    })
  }
})
