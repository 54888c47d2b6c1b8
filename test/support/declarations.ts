// Reading the built declarations (dist/**/*.d.ts) as users get them: which names each
// public entry point exports, where each is declared, and its doc comment. Shared by the
// API reference check (test/api-docs.test.ts) and the @example check
// (test/api-examples.test.ts).
import { readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'

export const root = new URL('../..', import.meta.url).pathname
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { exports: Record<string, string | { types?: string }> }

/** Every public entry point: its import specifier (`idem`, `idem/postgres`, …) and its declaration file. */
export const entryPoints: ReadonlyArray<{ readonly specifier: string; readonly file: string }> = Object.entries(pkg.exports)
  .filter(([subpath]) => subpath !== './package.json')
  .map(([subpath, target]) => ({
    specifier: subpath === '.' ? 'idem' : `idem/${subpath.slice(2)}`,
    file: join(root, typeof target === 'string' ? target : target.types!),
  }))

export interface Declaration {
  file: string
  name: string
  kind: string
  doc: string | undefined
}

const sources = new Map<string, string>()
export function text(file: string): string {
  let source = sources.get(file)
  if (source === undefined) sources.set(file, (source = readFileSync(file, 'utf8')))
  return source
}

export function declarationFile(from: string, specifier: string): string {
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
export function declarationOf(file: string, name: string, seen = new Set<string>()): Declaration | undefined {
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
export function exportedNames(file: string, seen = new Set<string>()): string[] {
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
