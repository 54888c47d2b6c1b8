// The API reference (docs/api/: Markdown that `npm run docs:api` makes of the doc comments
// with TypeDoc) is committed and shipped, so users read it on the repository and in
// node_modules/idem: a page for every entry point, listed in its index and linked from the
// README, in the package, and what TypeDoc makes of today's doc comments, never of an
// older build's.
import { execFile } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { entryPoints } from '../support/declarations.js'
import { packedFiles, page, root } from './support.js'

const run = promisify(execFile)
const tool = join(root, 'tools/api-reference')

/** An entry point's page: docs/api/idem/hono.md, or docs/api/idem/redis/README.md for one with namespaces. */
function pageOf(specifier: string): string | undefined {
  return [`docs/api/${specifier}.md`, `docs/api/${specifier}/README.md`].find((path) => existsSync(join(root, path)))
}

/** TypeDoc is installed in tools/api-reference as its lock says (`npm run docs:api` installs it from the registry). */
function typedocInstalled(): boolean {
  const stamp = join(tool, 'node_modules/.installed-lock')
  return existsSync(stamp) && readFileSync(stamp, 'utf8') === readFileSync(join(tool, 'package-lock.json'), 'utf8')
}

describe('the API reference in docs/api/', () => {
  it('has a page for every entry point, listed in its index, and the README links the index', () => {
    const index = page('docs/api/README.md')
    const unlisted = entryPoints
      .map(({ specifier }) => ({ specifier, path: pageOf(specifier) }))
      .filter(({ specifier, path }) => path === undefined || !index.includes(`[${specifier}](${path.slice('docs/api/'.length)})`))
    expect(unlisted.map(({ specifier }) => specifier)).toEqual([])
    expect(page('README.md')).toContain('](docs/api/README.md)')
  })

  it('ships in the package', async () => {
    const shipped = await packedFiles()
    const pages = ['docs/api/README.md', ...entryPoints.map(({ specifier }) => pageOf(specifier) ?? `docs/api/${specifier}.md`)]
    expect(pages.filter((path) => !shipped.has(path))).toEqual([])
  })

  it('is what TypeDoc makes of the doc comments today (npm run docs:api -- --check)', async () => {
    if (!typedocInstalled()) {
      // Tests reach no registry; .ci/run installs TypeDoc (and checks) before the tests.
      const reason = 'TypeDoc is not installed in tools/api-reference: run `npm run docs:api` once'
      if (process.env.CI) throw new Error(reason)
      console.warn(`SKIPPED: ${reason}`)
      return
    }
    // TypeDoc takes about 15 s of CPU on its own; on a busy machine several times that.
    const { stdout } = await run(process.execPath, [join(tool, 'build.mjs'), '--check'], { cwd: root, timeout: 540_000 })
    expect(stdout).toMatch(/docs\/api\/ is up to date \(\d+ pages\)/)
  }, 600_000)
})
