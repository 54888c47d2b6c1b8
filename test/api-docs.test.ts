// Every export of every public entry point (package.json "exports") has a JSDoc summary,
// and every exported function and class (error classes aside: their summary says when they
// are thrown) an @example: the doc comments are the
// API reference, so a missing one fails the build. Read from the built .d.ts files,
// which keep the comments, so this checks exactly what users see.
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'

const root = new URL('..', import.meta.url).pathname
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { exports: Record<string, string | { types?: string }> }

interface Declaration {
  file: string
  name: string
  kind: string
  doc: string | undefined
}

const sources = new Map<string, string>()
function text(file: string): string {
  let source = sources.get(file)
  if (source === undefined) sources.set(file, (source = readFileSync(file, 'utf8')))
  return source
}

function declarationFile(from: string, specifier: string): string {
  return resolve(dirname(from), specifier.replace(/\.js$/, '.d.ts'))
}

/** The doc comment that ends right before `index` in `source`, if any. */
function docBefore(source: string, index: number): string | undefined {
  const before = source.slice(0, index).trimEnd()
  if (!before.endsWith('*/')) return undefined
  const start = before.lastIndexOf('/**')
  return start === -1 ? undefined : before.slice(start)
}

/** Finds where `name` is declared in `file`, following re-exports. */
function declarationOf(file: string, name: string, seen = new Set<string>()): Declaration | undefined {
  const key = `${file}#${name}`
  if (seen.has(key)) return undefined
  seen.add(key)
  const source = text(file)
  const declared = new RegExp(
    `^(?:export )?(?:declare )?(?:abstract )?(function|const|let|class|interface|type|enum|namespace) ${name}\\b`,
    'm',
  ).exec(source)
  if (declared !== null) return { file, name, kind: declared[1]!, doc: docBefore(source, declared.index) }
  for (const match of source.matchAll(/^export (?:type )?\{([^}]*)\} from '([^']+)';?$/gm)) {
    for (const part of match[1]!.split(',')) {
      const [original, alias] = part.replace(/\btype\s+/, '').trim().split(/\s+as\s+/)
      if ((alias ?? original) === name) return declarationOf(declarationFile(file, match[2]!), original!, seen)
    }
  }
  for (const match of source.matchAll(/^export \* from '([^']+)';?$/gm)) {
    const found = declarationOf(declarationFile(file, match[1]!), name, seen)
    if (found !== undefined) return found
  }
  return undefined
}

/** The names an entry file exports (re-exports followed, `export *` expanded). */
function exportedNames(file: string, seen = new Set<string>()): string[] {
  if (seen.has(file)) return []
  seen.add(file)
  const source = text(file)
  const names: string[] = []
  for (const match of source.matchAll(/^export (?:declare )?(?:abstract )?(?:function|const|let|class|interface|type|enum|namespace) (\w+)/gm)) names.push(match[1]!)
  for (const match of source.matchAll(/^export (?:type )?\{([^}]*)\}(?: from '[^']+')?;?$/gm)) {
    for (const part of match[1]!.split(',')) {
      const [original, alias] = part.replace(/\btype\s+/, '').trim().split(/\s+as\s+/)
      if (original !== undefined && original !== '') names.push(alias ?? original)
    }
  }
  for (const match of source.matchAll(/^export \* from '([^']+)';?$/gm)) names.push(...exportedNames(declarationFile(file, match[1]!), seen))
  return [...new Set(names)]
}

const entries = Object.entries(pkg.exports)
  .filter(([subpath]) => subpath !== './package.json')
  .map(([subpath, target]) => [subpath, join(root, typeof target === 'string' ? target : target.types!)] as const)

describe('the API reference (doc comments of every public export)', () => {
  it('builds first: dist/ holds every entry point', () => {
    for (const [, file] of entries) expect(existsSync(file), file).toBe(true)
  })

  for (const [subpath, file] of entries) {
    it(`${subpath === '.' ? 'idem' : `idem/${subpath.slice(2)}`}: every export has a summary, every function and class an @example`, () => {
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
