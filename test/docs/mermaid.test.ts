// Every ```mermaid block of the docs (docs/**/*.md, README.md, CONTRIBUTING.md) renders
// to SVG with the mermaid package in headless Chromium, the way a Markdown viewer draws
// it. A diagram that does not parse fails the test with its page, its line and mermaid's
// error. The SVGs go to a temporary directory (MERMAID_SVG_DIR keeps them), never the repo.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { chromium, type Browser, type Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { root } from './support.js'

// The page function runs in the browser, where mermaid is a global; Node's types lack it.
declare const mermaid: any // eslint-disable-line @typescript-eslint/no-explicit-any

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
const haveChromium = existsSync(CHROMIUM)
if (!haveChromium) {
  if (process.env.CI) throw new Error(`Chromium is required in CI at ${CHROMIUM} (apt-get install chromium)`)
  console.warn(`SKIPPED: no Chromium at ${CHROMIUM}`)
}

interface Diagram {
  file: string
  line: number
  source: string
}

function markdownFiles(dir: string): string[] {
  const found: string[] = []
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) found.push(...markdownFiles(path))
    else if (entry.isFile() && entry.name.endsWith('.md')) found.push(path)
  }
  return found
}

/** The ```mermaid blocks of a Markdown file, with the line each starts on. */
function mermaidBlocks(file: string, text: string): Diagram[] {
  const diagrams: Diagram[] = []
  const lines = text.split('\n')
  for (let i = 0; i < lines.length; i++) {
    if (lines[i]!.trim() !== '```mermaid') continue
    const start = i + 1
    let end = start
    while (end < lines.length && lines[end]!.trim() !== '```') end++
    diagrams.push({ file, line: start + 1, source: lines.slice(start, end).join('\n') })
    i = end
  }
  return diagrams
}

const pages = [join(root, 'README.md'), join(root, 'CONTRIBUTING.md'), ...markdownFiles(join(root, 'docs'))].filter((file) => existsSync(file))
const diagrams = pages.flatMap((file) => mermaidBlocks(relative(root, file), readFileSync(file, 'utf8')))

/** Renders each diagram; resolves with its SVG or mermaid's error message. */
async function render(page: Page, sources: string[]): Promise<Array<{ svg?: string; error?: string }>> {
  return page.evaluate(async (list) => {
    const results: Array<{ svg?: string; error?: string }> = []
    for (const [i, source] of list.entries()) {
      try {
        const { svg } = await mermaid.render(`diagram-${i}`, source)
        results.push({ svg })
      } catch (error) {
        results.push({ error: String((error as Error)?.message ?? error) })
      }
    }
    return results
  }, sources)
}

describe.skipIf(!haveChromium)('Mermaid diagrams in the docs render in Chromium', () => {
  let browser: Browser
  let page: Page
  const keep = process.env.MERMAID_SVG_DIR
  const out = keep ?? mkdtempSync(join(tmpdir(), 'idem-mermaid-'))
  beforeAll(async () => {
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    })
    page = await browser.newPage()
    await page.setContent('<!doctype html><html><body></body></html>')
    await page.addScriptTag({ path: createRequire(import.meta.url).resolve('mermaid/dist/mermaid.min.js') })
    // Errors are thrown rather than drawn into the page, so a broken diagram cannot pass as a picture of an error.
    await page.evaluate(() => mermaid.initialize({ startOnLoad: false, securityLevel: 'strict', suppressErrorRendering: true }))
  })
  afterAll(async () => {
    await browser?.close()
    if (keep === undefined) rmSync(out, { recursive: true, force: true })
  })

  it('the harness reports a diagram that does not parse, with mermaid\'s error', async () => {
    const [broken] = await render(page, ['stateDiagram-v2\n    [*] --> --> Held'])
    expect(broken!.svg).toBeUndefined()
    expect(broken!.error).toMatch(/Parse error on line 2/)
  })

  it('the docs have diagrams to check (docs/how-it-works.md has four)', () => {
    expect(diagrams.filter((d) => d.file === join('docs', 'how-it-works.md')).length).toBeGreaterThanOrEqual(4)
  })

  it(`every \`\`\`mermaid block renders to SVG (${diagrams.length} blocks in ${new Set(diagrams.map((d) => d.file)).size} pages)`, async () => {
    const results = await render(page, diagrams.map((d) => d.source))
    const failures: string[] = []
    mkdirSync(out, { recursive: true })
    results.forEach((result, i) => {
      const { file, line } = diagrams[i]!
      if (result.svg === undefined || !result.svg.startsWith('<svg')) {
        failures.push(`${file}:${line}: ${result.error ?? 'no SVG'}`)
        return
      }
      writeFileSync(join(out, `${file.replace(/[/\\]/g, '_')}-${line}.svg`), result.svg)
    })
    if (failures.length > 0) throw new Error(`${failures.length} diagram(s) do not render:\n\n${failures.join('\n\n')}`)
  })
})
