// Every TypeScript block (```ts) in README.md and docs/ compiles under `strict` against
// the packed package, as a user's strict app would compile it: each block is a module of
// its own in a fresh project where idem is installed from its tarball. A block that is a
// part of a program (it uses a `store` or an `app` made in an earlier block) says what it
// takes from around it in an HTML comment right above it, which the page does not show:
//
//   <!-- snippet-context
//   declare const store: KeyStore<PgClient>
//   -->
//
// Every error is reported at its line in the page.
import { execFile } from 'node:child_process'
import { cpSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { packedProject, type PackedProject } from './packed-project.js'
import { page, root } from './support.js'

const run = promisify(execFile)

/** What a strict user app compiles with: Nest's decorators on, everything else TypeScript's strict defaults. */
const TSCONFIG = {
  compilerOptions: {
    strict: true,
    module: 'nodenext',
    moduleResolution: 'nodenext',
    target: 'es2022',
    types: ['node'],
    skipLibCheck: true,
    noEmit: true,
    experimentalDecorators: true,
    emitDecoratorMetadata: true,
  },
  include: ['snippets', 'shims'],
}

/** One ```ts block: where it is, the context it declares, and its text. */
export interface Snippet {
  readonly page: string
  /** The page's line of the first line of code (the one after the fence). */
  readonly line: number
  readonly context: string
  readonly code: string
}

/** The ```ts blocks of a page, each with the hidden context right above it (if any). */
export function snippetsOf(path: string): Snippet[] {
  const text = page(path)
  const blocks: Snippet[] = []
  for (const match of text.matchAll(/(?:<!-- snippet-context\n([\s\S]*?)-->\n)?^```ts\n([\s\S]*?)^```$/gm)) {
    const fence = match.index + match[0].indexOf('```ts')
    const line = text.slice(0, fence).split('\n').length + 1
    blocks.push({ page: path, line, context: match[1] ?? '', code: match[2]! })
  }
  return blocks
}

const pages = ['README.md', ...readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`), ...readdirSync(join(root, 'docs/guides')).filter((f) => f.endsWith('.md')).map((f) => `docs/guides/${f}`)]
const snippets = pages.flatMap(snippetsOf)
const fileOf = (snippet: Snippet) => `snippets/${snippet.page.replaceAll('/', '__').replace(/\.md$/, '')}__L${snippet.line}.ts`

/** tsc's errors, each at the page line it points to (a context line points at the comment). */
async function compile(project: string): Promise<Map<string, string[]>> {
  const errors = new Map<string, string[]>()
  const tsc = join(root, 'node_modules/.bin/tsc')
  const output = await run(tsc, ['-p', 'tsconfig.json', '--pretty', 'false'], { cwd: project, maxBuffer: 16 * 1024 * 1024, timeout: 240_000 }).then(
    ({ stdout }) => stdout,
    (error: { stdout?: string }) => error.stdout ?? String(error),
  )
  for (const [, file, row, message] of output.matchAll(/^(snippets\/\S+\.ts)\((\d+),\d+\): (error .*)$/gm)) {
    const snippet = snippets.find((s) => fileOf(s) === file)!
    const contextLines = snippet.context === '' ? 0 : snippet.context.split('\n').length - 1
    const at = Number(row) <= contextLines ? `${snippet.page}:${snippet.line - 1} (snippet-context)` : `${snippet.page}:${snippet.line + Number(row) - 1 - contextLines}`
    errors.set(snippet.page, [...(errors.get(snippet.page) ?? []), `${at}: ${message}`])
  }
  const unplaced = output.split('\n').filter((l) => /error TS/.test(l) && !l.startsWith('snippets/'))
  if (unplaced.length > 0) errors.set('(project)', unplaced)
  return errors
}

describe('docs: every TypeScript block compiles under strict against the packed package', () => {
  let project: PackedProject
  let errors: Map<string, string[]>
  beforeAll(async () => {
    project = await packedProject('snippets')
    writeFileSync(join(project.dir, 'tsconfig.json'), JSON.stringify(TSCONFIG, null, 2))
    mkdirSync(join(project.dir, 'snippets'))
    cpSync(join(root, 'test/docs/snippet-shims'), join(project.dir, 'shims'), { recursive: true })
    // Each block a module (`export {}`), so one block's names never meet another's.
    for (const s of snippets) writeFileSync(join(project.dir, fileOf(s)), `${s.context}${s.code}\nexport {}\n`)
    errors = await compile(project.dir)
  }, 300_000)
  afterAll(() => project?.remove())

  it('finds the blocks (a page that drops its fences would pass for nothing)', () => {
    expect(snippets.length).toBeGreaterThan(50)
    expect(errors.get('(project)') ?? []).toEqual([])
  })

  for (const path of pages.filter((p) => snippets.some((s) => s.page === p))) {
    it(`${path}: ${snippets.filter((s) => s.page === path).length} blocks compile`, () => {
      expect(errors.get(path) ?? []).toEqual([])
    })
  }

  it('a block with an error fails: the check is not vacuous', async () => {
    const file = join(project.dir, 'snippets/zz-broken.ts')
    writeFileSync(file, "import { createIdem } from 'idem'\nconst idem: number = createIdem\nexport {}\n")
    const output = await run(join(root, 'node_modules/.bin/tsc'), ['-p', 'tsconfig.json', '--pretty', 'false'], { cwd: project.dir, timeout: 240_000 }).then(
      () => '',
      (error: { stdout?: string }) => error.stdout ?? '',
    )
    expect(output).toMatch(/^snippets\/zz-broken\.ts\(2,7\): error TS2322/m)
  })
})
