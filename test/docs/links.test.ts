// Every relative link of the docs (README.md, CONTRIBUTING.md, CHANGELOG.md, SECURITY.md,
// docs/**/*.md, the API reference in docs/api/ among them) points at a
// file that exists and, with a #fragment, at a heading of that page (GitHub's anchors),
// so moving or renaming a page or a section cannot leave readers at a dead end.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, normalize, relative } from 'node:path'
import { describe, expect, it } from 'vitest'
import { packedFiles, root } from './support.js'

function markdownFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return markdownFiles(path)
    return entry.name.endsWith('.md') ? [path] : []
  })
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
function anchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-')
}

/** The page without its fenced code blocks, where link-like text is code, not a link. */
function prose(text: string): string {
  return text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '')
}

// Read once per page: the API reference's pages link to their own headings thousands of times.
const anchorsByFile = new Map<string, Set<string>>()

function anchorsOf(file: string): Set<string> {
  const known = anchorsByFile.get(file)
  if (known !== undefined) return known
  const seen = new Map<string, number>()
  const anchors = new Set<string>()
  anchorsByFile.set(file, anchors)
  for (const match of prose(readFileSync(file, 'utf8')).matchAll(/^#{1,6} (.+)$/gm)) {
    const base = anchor(match[1]!)
    const n = seen.get(base) ?? 0
    seen.set(base, n + 1)
    anchors.add(n === 0 ? base : `${base}-${n}`)
  }
  return anchors
}

const pages = ['README.md', 'CONTRIBUTING.md', 'CHANGELOG.md', 'SECURITY.md'].map((file) => join(root, file)).concat(markdownFiles(join(root, 'docs')))

describe('links in the docs', () => {
  for (const page of pages) {
    it(`${relative(root, page)}: every relative link and anchor resolves`, () => {
      const broken: string[] = []
      const text = prose(readFileSync(page, 'utf8')).replace(/`[^`\n]*`/g, '')
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/i.test(target!)) continue
        const [path, fragment] = target!.split('#') as [string, string | undefined]
        const file = path === '' ? page : join(dirname(page), path)
        if (!existsSync(file)) {
          broken.push(`${target}: no such file`)
          continue
        }
        if (fragment !== undefined && statSync(file).isFile() && file.endsWith('.md') && !anchorsOf(file).has(fragment)) {
          broken.push(`${target}: no heading with that anchor in ${relative(root, file)}`)
        }
      }
      expect(broken).toEqual([])
    })
  }
})

// The README and docs ship in the package (package.json "files"), where a reader sees
// them in node_modules/idem or on the registry's page: a link there to a file the
// package leaves out (a test, a bench result, an example) points nowhere.
describe('links in the packed docs', () => {
  it('point only at files the package ships', async () => {
    const shipped = await packedFiles()
    const isShipped = (path: string) => shipped.has(path) || [...shipped].some((file) => file.startsWith(`${path}/`))
    const broken: string[] = []
    for (const page of [...shipped].filter((path) => path.endsWith('.md'))) {
      const text = prose(readFileSync(join(root, page), 'utf8')).replace(/`[^`\n]*`/g, '')
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/i.test(target!) || target!.startsWith('#')) continue
        const path = normalize(join(dirname(page), target!.split('#')[0]!)).replace(/\/$/, '')
        if (!isShipped(path)) broken.push(`${page}: ${target} (${path} is not in the package)`)
      }
    }
    expect(broken).toEqual([])
  })

  it('name no home the project does not have: no repository, no problem-type or runbook URL under it', async () => {
    // idem has no public repository or site yet: package.json names none, problem types
    // are identifiers (docs/problems.md), runbooks name their section of docs/operating.md.
    const shipped = [...(await packedFiles())]
    const naming = shipped.filter((path) => /github\.com\/idem-js/.test(readFileSync(join(root, path), 'latin1')))
    expect(naming).toEqual([])
  })
})
