// INSTALL LINES, as the docs write them (README.md, docs/guides/bun.md, docs/guides/deno.md,
// docs/lambda.md): every ```sh block that installs idem's tarball is run line by line in an
// empty project, as a user types it (the tarball's path put in for /path/to/idem/), with
// the runtime the page is about (bun and deno from this repository's dev dependencies);
// then a program imports what the page installs and runs under that runtime. It installs
// from the npm registry (cache first), so it runs with `npm run test:install`. The `npm ci
// && npm pack` line runs in a checkout of idem, which is this repository: the test packs it
// itself (`npm pack`, built files as they are).
import { execFile } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const run = promisify(execFile)
const root = new URL('../..', import.meta.url).pathname
const LINE_MS = 180_000
const PLACEHOLDER = '/path/to/idem/idem-0.1.0.tgz'

/** The lines of the page's install blocks (```sh blocks naming the tarball), comments and the checkout's own line left out. */
function installLines(page: string): string[] {
  const text = readFileSync(join(root, page), 'utf8')
  const blocks = [...text.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map(([, block]) => block!).filter((block) => block.includes(PLACEHOLDER))
  return blocks
    .flatMap((block) => block.split('\n'))
    .map((line) => line.replace(/\s+#.*$/, '').trim())
    .filter((line) => line !== '' && !line.startsWith('#') && !line.startsWith('npm ci'))
}

// A program that uses what the page installed: the engine on the memory store, and Hono's
// middleware where the page installs hono. It prints one line a test can compare.
const ENGINE = `import { createIdem } from 'idem'
import { memoryStore } from 'idem/memory'
const idem = createIdem({ store: memoryStore() })
const first = await idem.run({ scope: 's', key: 'k', input: 1 }, async () => ({ charged: 1 }))
const again = await idem.run({ scope: 's', key: 'k', input: 1 }, async () => ({ charged: 2 }))
console.log(JSON.stringify([first.value, again.value, again.replayed]))
`
const HONO = `import { Hono } from 'hono'
import { idempotency } from 'idem/hono'
import { memoryStore } from 'idem/memory'
let orders = 0
const app = new Hono()
app.use('/orders', idempotency({ store: memoryStore(), scope: () => 'shop' }))
app.post('/orders', (c) => c.json({ order: ++orders }, 201))
const send = () => app.request('/orders', { method: 'POST', headers: { 'idempotency-key': '"k1"' } })
const [a, b] = [await send(), await send()]
console.log(JSON.stringify([a.status, await a.text(), b.headers.get('idempotent-replayed'), await b.text()]))
`
const PRINTED = { engine: '[{"charged":1},{"charged":1},true]', hono: '[201,"{\\"order\\":1}","true","{\\"order\\":1}"]' }

const pages = [
  { page: 'README.md', runtime: ['node'], program: ENGINE, printed: PRINTED.engine, installs: 'npm install' },
  { page: 'docs/lambda.md', runtime: ['node'], program: ENGINE, printed: PRINTED.engine, installs: 'npm install' },
  { page: 'docs/guides/bun.md', runtime: ['bun'], program: HONO, printed: PRINTED.hono, installs: 'bun add' },
  { page: 'docs/guides/deno.md', runtime: ['deno', 'run', '-A', '--cached-only'], program: HONO, printed: PRINTED.hono, installs: 'npm install' },
]

describe('install lines: each page installs idem from its tarball as it says, and the result runs', () => {
  const dir = mkdtempSync(join(tmpdir(), 'idem-install-lines-'))
  let tarball: string
  beforeAll(async () => {
    const { stdout } = await run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', dir], { cwd: root, maxBuffer: 16 * 1024 * 1024 })
    tarball = join(dir, (JSON.parse(stdout) as Array<{ filename: string }>)[0]!.filename)
  }, 120_000)
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('the pages write the tarball npm pack makes', () => {
    expect(tarball.endsWith(`/${PLACEHOLDER.split('/').at(-1)}`)).toBe(true)
  })

  for (const { page, runtime, program, printed, installs } of pages) {
    it(
      `${page}: ${installLines(page).join(' && ')}`,
      async () => {
        const lines = installLines(page)
        expect(lines.length, `${page} has an install block naming ${PLACEHOLDER}`).toBeGreaterThan(0)
        expect(lines[0]!.startsWith(`${installs} ${PLACEHOLDER}`), lines[0]).toBe(true)
        const project = join(dir, page.replaceAll('/', '_'))
        mkdirSync(project)
        writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'user-app', version: '1.0.0', private: true, type: 'module' }))
        // The user's shell: this repository's bun and deno on the PATH, npm preferring its cache.
        const env = { ...process.env, PATH: `${join(root, 'node_modules/.bin')}:${process.env.PATH}`, npm_config_prefer_offline: 'true', npm_config_audit: 'false', npm_config_fund: 'false' }
        for (const line of lines) await run('sh', ['-c', line.replaceAll(PLACEHOLDER, tarball)], { cwd: project, env, timeout: LINE_MS })
        const [bin, ...args] = runtime
        const file = bin === 'node' ? 'main.mjs' : 'main.ts'
        writeFileSync(join(project, file), program)
        const { stdout } = await run(bin!, [...args, file], { cwd: project, env, timeout: 60_000 })
        expect(stdout.trim()).toBe(printed)
      },
      lines(page) * LINE_MS + 60_000,
    )
  }
})

function lines(page: string): number {
  return Math.max(1, installLines(page).length)
}
