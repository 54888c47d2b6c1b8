// The subpaths docs/runtimes.md says run on Node, Bun and Deno import nothing Node-only:
// each one's import graph, walked through the built files (static imports, re-exports,
// `import()` of a literal), holds only the allowed Node built-ins and no Node-only
// package or module. The table in the page is the list: every export is in it once.
import { parseSync } from '@swc/core'
import { existsSync, readFileSync } from 'node:fs'
import { isBuiltin } from 'node:module'
import { dirname, join, relative, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'
import { root } from './support.js'

const PAGE = 'docs/runtimes.md'

/** Built-ins Bun and Deno implement, and where idem may use them (undefined: anywhere). */
const ALLOWED_BUILTINS: Record<string, readonly string[] | undefined> = {
  'node:crypto': undefined,
  'node:util': undefined,
  // isUtf8, for the fingerprint's one check of a body's bytes (Bun and Deno have it).
  'node:buffer': undefined,
  // The Postgres store's CancelRequest, over the transport pg itself uses.
  'node:net': ['dist/stores/postgres/driver/cancel.js'],
  // Request bodies' content codings, decoded in bounded pieces (Deno's DecompressionStream
  // inflates a whole write at once; Node 20's has no brotli). The slice decodes gzip,
  // deflate and br on both runtimes through the conformance table.
  'node:zlib': ['dist/http/content-coding.js'],
}
/** Node-only packages, and the fault proxies' modules (`idem/testing`'s Node servers). */
const REFUSED_PACKAGES = /^(express|express4|koa|koa2|fastify|@nestjs\/.*|@hono\/node-server|better-sqlite3|light-my-request)(\/.*)?$/
const REFUSED_MODULES = ['dist/testing/faults.js', 'dist/testing/tcp-proxy.js']

interface Import {
  from: string
  specifier: string
}

/** Every specifier a module imports or re-exports, or loads with `import('…')`. */
function importsOf(file: string): string[] {
  const found: string[] = []
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(visit)
    if (node === null || typeof node !== 'object') return
    const n = node as { type?: string; source?: { value: string }; callee?: { type?: string }; arguments?: Array<{ expression?: { type?: string; value?: unknown } }> }
    if ((n.type === 'ImportDeclaration' || n.type === 'ExportAllDeclaration' || n.type === 'ExportNamedDeclaration') && n.source) found.push(n.source.value)
    if (n.type === 'CallExpression' && n.callee?.type === 'Import') {
      const argument = n.arguments?.[0]?.expression
      // A computed specifier is a choice made when it runs (openSqlite's driver): no graph shows it.
      if (argument?.type === 'StringLiteral' && typeof argument.value === 'string') found.push(argument.value)
    }
    for (const value of Object.values(node)) visit(value)
  }
  visit(parseSync(readFileSync(file, 'utf8'), { syntax: 'ecmascript' }))
  return found
}

/** The modules reachable from `entry` (project-relative paths) and what they import from outside. */
function graphOf(entry: string): { modules: Set<string>; outside: Import[] } {
  const modules = new Set<string>()
  const outside: Import[] = []
  const walk = (file: string): void => {
    const path = relative(root, file)
    if (modules.has(path)) return
    modules.add(path)
    for (const specifier of importsOf(file)) {
      if (specifier.startsWith('.')) walk(resolve(dirname(file), specifier))
      else outside.push({ from: path, specifier })
    }
  }
  walk(join(root, entry))
  return { modules, outside }
}

/** Why an import is not allowed in a Web-standard subpath, or undefined. */
function refusal({ from, specifier }: Import): string | undefined {
  if (isBuiltin(specifier)) {
    const builtin = specifier.startsWith('node:') ? specifier : `node:${specifier}`
    if (!(builtin in ALLOWED_BUILTINS)) return `${from} imports ${specifier}, a Node built-in not in the allowed list`
    const where = ALLOWED_BUILTINS[builtin]
    if (where !== undefined && !where.includes(from)) return `${from} imports ${specifier}, allowed only in ${where.join(', ')}`
    return undefined
  }
  if (REFUSED_PACKAGES.test(specifier)) return `${from} imports ${specifier}, which runs on Node only`
  return undefined
}

/** The page's table: subpath → what it runs on. */
function runsOn(): Map<string, string> {
  const rows = new Map<string, string>()
  for (const match of readFileSync(join(root, PAGE), 'utf8').matchAll(/^\| `(idem(?:\/[a-z-/]+)?)` \| ([^|]+) \|/gm)) {
    expect(rows.has(match[1]!), `${PAGE} lists ${match[1]} once`).toBe(false)
    rows.set(match[1]!, match[2]!.trim())
  }
  return rows
}

const exportsMap = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).exports as Record<string, string | { default: string }>
const subpaths = Object.entries(exportsMap).flatMap(([key, target]) => (typeof target === 'string' ? [] : [[key === '.' ? 'idem' : `idem/${key.slice(2)}`, target.default] as const]))
const table = runsOn()
const neutral = subpaths.filter(([name]) => table.get(name) === 'Node, Bun, Deno')

describe(`the subpaths ${PAGE} says run on Node, Bun and Deno import nothing Node-only`, () => {
  it('the page lists every subpath once, as running everywhere or on Node only', () => {
    expect(existsSync(join(root, 'dist/index.js')), 'build first: the graphs are walked through dist/').toBe(true)
    expect([...table.keys()].sort()).toEqual(subpaths.map(([name]) => name).sort())
    for (const [name, where] of table) expect(['Node, Bun, Deno', 'Node only'], `${name}: ${where}`).toContain(where)
  })

  for (const [name, target] of neutral) {
    it(`${name}: only ${Object.keys(ALLOWED_BUILTINS).join(', ')} of Node's built-ins; no Node-only package or module`, () => {
      const { modules, outside } = graphOf(target)
      expect(outside.map(refusal).filter((why) => why !== undefined)).toEqual([])
      expect([...modules].filter((module) => REFUSED_MODULES.includes(module))).toEqual([])
    })
  }

  it('the check catches what it is for: the Node-only subpaths fail it', () => {
    const why = (name: string) => {
      const { modules, outside } = graphOf(subpaths.find(([subpath]) => subpath === name)![1])
      return [...outside.map(refusal).filter((reason) => reason !== undefined), ...[...modules].filter((module) => REFUSED_MODULES.includes(module))]
    }
    expect(why('idem/testing')).toEqual(expect.arrayContaining(['dist/testing/faults.js imports node:http, a Node built-in not in the allowed list', 'dist/testing/faults.js']))
    expect(why('idem/express').some((reason) => reason.includes('node:stream'))).toBe(true)
    expect(why('idem/nestjs').some((reason) => reason.includes('node:stream'))).toBe(true)
    expect(why('idem/koa').some((reason) => reason.includes('node:stream'))).toBe(true)
  })
})
