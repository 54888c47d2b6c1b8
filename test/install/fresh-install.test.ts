// FRESH-INSTALL TEST: needs the npm registry, so it is not part of `npm test`;
// `npm run test:install` runs it, and so does .ci/run after the tests. What a new user does: `npm pack` this package, install the
// tarball into an empty project beside express@4 (no --legacy-peer-deps, engines
// enforced), and run a tiny app through one request and its replay. It catches what
// the repository's own install hides: a peer range that refuses Express 4, a
// dependency missing from `dependencies`, a file missing from `files`, an export that
// points nowhere.
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, describe, expect, it } from 'vitest'

const run = promisify(execFile)
const root = new URL('../..', import.meta.url).pathname
// Bounded: a cached install takes seconds; a cold one with the registry well under this.
const INSTALL_MS = 180_000

// The parent npm's settings (npm test passes them down as npm_config_*) must not shape
// the user's install; the cache is kept so that --prefer-offline has something to use.
function userEnvironment(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {}
  for (const [name, value] of Object.entries(process.env)) {
    if (!name.toLowerCase().startsWith('npm_') || name.toLowerCase() === 'npm_config_cache') env[name] = value
  }
  return env
}

const APP = `
import express from 'express'
import { idempotency } from 'idem/express'
import { memoryStore } from 'idem/memory'

let orders = 0
const app = express()
app.use(idempotency({ store: memoryStore(), scope: (_request, req) => req.get('x-account') ?? 'anonymous' }))
app.use(express.json())
app.post('/orders', (req, res) => res.status(201).json({ order: ++orders, amount: req.body.amount }))
const server = app.listen(0, '127.0.0.1', async () => {
  const url = 'http://127.0.0.1:' + server.address().port + '/orders'
  const send = () => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': '"fresh-1"', 'x-account': 'a' }, body: '{"amount":5}' })
  for (const response of [await send(), await send()]) {
    console.log(response.status, response.headers.get('idempotent-replayed') ?? '-', await response.text())
  }
  console.log('express', (await import('express/package.json', { with: { type: 'json' } })).default.version)
  server.close()
})
`

describe('fresh install from the packed tarball, beside express@4', () => {
  const dir = mkdtempSync(join(tmpdir(), 'idem-fresh-install-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it(
    'installs without --legacy-peer-deps and replays on Express 4',
    async () => {
      const env = userEnvironment()
      const { stdout: packed } = await run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', dir], { cwd: root, env, maxBuffer: 16 * 1024 * 1024 })
      const tarball = join(dir, (JSON.parse(packed) as Array<{ filename: string }>)[0]!.filename)
      const project = join(dir, 'app')
      await run('mkdir', [project])
      writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'fresh-app', version: '1.0.0', private: true, type: 'module' }))
      writeFileSync(join(project, 'app.mjs'), APP)
      await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--engine-strict', tarball, 'express@4'], {
        cwd: project,
        env,
        timeout: INSTALL_MS,
      })
      const { stdout } = await run(process.execPath, ['app.mjs'], { cwd: project, env, timeout: 30_000 })
      const lines = stdout.trim().split('\n')
      expect(lines[0]).toBe('201 - {"order":1,"amount":5}')
      expect(lines[1]).toBe('201 true {"order":1,"amount":5}')
      expect(lines[2]).toMatch(/^express 4\./)
    },
    INSTALL_MS + 60_000,
  )
})
