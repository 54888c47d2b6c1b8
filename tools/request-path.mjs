// Lists the files of idem whose code runs while one fresh request is answered, for three
// combinations of front end and store: the Fetch middleware on Postgres (called
// directly), Express on Postgres and Hono on Redis (ioredis, the leased engine), the last
// two over a real loopback HTTP connection. Each is measured after warm-up requests (so
// nothing made once is counted), by V8's precise coverage of that one request, one
// combination at a time (the previous one closed first, so none of its timers count).
// Usage: node tools/request-path.mjs [--json | --docs] [--only NAME] [--schema NAME] [--prefix PREFIX]
// (needs a built dist/, Postgres and Redis; without --schema it makes a schema of its own
// and drops it; without --prefix its Redis keys get one of their own, deleted at the end).
// --docs writes the lists and their counts into docs/architecture.md (its
// `<!-- request-path: NAME -->` blocks and the "crosses N files, M of them outside
// src/stores/" sentence before each), which test/request-path.test.ts holds to what runs.
import { once } from 'node:events'
import { readFileSync, writeFileSync } from 'node:fs'
import { Session } from 'node:inspector/promises'
import { relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Redis } from 'ioredis'
import pg from 'pg'
import { dropRedisKeys } from '../bench/support.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
const argument = (name) => {
  const at = process.argv.indexOf(name)
  return at > 0 ? process.argv[at + 1] : undefined
}
const givenSchema = argument('--schema')
const schema = givenSchema ?? `request_path_${process.pid}`
const prefix = argument('--prefix') ?? `idem-request-path:${process.pid}:`
const PG_URL = process.env.IDEM_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const REDIS_URL = process.env.IDEM_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'
const BODY = '{"amount":1}'
const SCOPE = () => 'tenant'

/**
 * Each combination: `start()` resolves with `fresh(n)` (answers the n-th fresh request,
 * throwing unless it got 201) and `close()`.
 */
const COMBINATIONS = {
  'fetch-postgres': { label: 'Fetch middleware, Postgres store', start: fetchPostgres },
  'express-postgres': { label: 'Express, Postgres store', start: expressPostgres },
  'hono-redis': { label: 'Hono on @hono/node-server, Redis store (ioredis)', start: honoRedis },
}

async function postgresStoreOf(pool) {
  const { postgresStore } = await import('../dist/stores/postgres/index.js')
  const store = postgresStore({ pool, schema })
  await store.migrate()
  return store
}

async function fetchPostgres(pool) {
  const { idempotency } = await import('../dist/http/fetch/index.js')
  const protect = idempotency({ store: await postgresStoreOf(pool), scope: SCOPE })
  const fresh = async (n) => {
    const headers = { 'idempotency-key': `fetch-${n}`, 'content-type': 'application/json' }
    const response = await protect(new Request('http://localhost/orders', { method: 'POST', headers, body: BODY }), async () => Response.json({ ok: true }, { status: 201 }))
    if (response.status !== 201) throw new Error(`fetch-postgres: a fresh request answered ${response.status}`)
  }
  return { fresh, close: async () => {} }
}

async function expressPostgres(pool) {
  const [{ default: express }, { idempotency }] = await Promise.all([import('express'), import('../dist/http/adapters/express/index.js')])
  const app = express()
  app.post('/orders', idempotency({ store: await postgresStoreOf(pool), scope: SCOPE }), (_req, res) => res.status(201).json({ ok: true }))
  const server = app.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return overHttp('express', server)
}

async function honoRedis() {
  const [{ Hono }, { serve }, { idempotency }, { createLeasedIdem }, { redisStore }] = await Promise.all([
    import('hono'),
    import('@hono/node-server'),
    import('../dist/http/adapters/hono/index.js'),
    import('../dist/index.js'),
    import('../dist/stores/redis/index.js'),
  ])
  // As docs/leased.md recommends for a server.
  const client = new Redis(REDIS_URL, { enableAutoPipelining: true })
  const app = new Hono()
  app.use('/orders', idempotency({ idem: createLeasedIdem({ store: redisStore({ client, prefix }) }), scope: SCOPE }))
  app.post('/orders', (c) => c.json({ ok: true }, 201))
  const server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 })
  await once(server, 'listening')
  const served = overHttp('hono', server)
  return {
    fresh: served.fresh,
    close: async () => {
      await served.close()
      await dropRedisKeys(client, prefix)
      await client.quit()
    },
  }
}

/**
 * Fresh requests to a listening server, each done when the client has read the answer
 * and the server has finished sending it (so work after the answer is counted too).
 */
function overHttp(name, server) {
  const { port } = server.address()
  const finished = []
  server.on('request', (_req, res) => finished.push(once(res, 'close')))
  const fresh = async (n) => {
    const headers = { 'idempotency-key': `${name}-${n}`, 'content-type': 'application/json' }
    const response = await fetch(`http://127.0.0.1:${port}/orders`, { method: 'POST', headers, body: BODY })
    await response.arrayBuffer()
    await Promise.all(finished.splice(0))
    if (response.status !== 201) throw new Error(`${name}: a fresh request answered ${response.status}`)
  }
  const close = async () => {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  }
  return { fresh, close }
}

/** The files of dist/ (as their src/ .ts names) whose code ran in one fresh request after 20. */
async function measure({ fresh }) {
  for (let n = 0; n < 20; n++) await fresh(n)
  const session = new Session()
  session.connect()
  await session.post('Profiler.enable')
  await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false })
  await session.post('Profiler.takePreciseCoverage') // resets the counts
  await fresh(20)
  const { result } = await session.post('Profiler.takePreciseCoverage')
  await session.post('Profiler.stopPreciseCoverage')
  session.disconnect()
  return result
    .filter((script) => script.url.startsWith('file://') && fileURLToPath(script.url).startsWith(`${root}dist/`))
    .filter((script) => script.functions.some((fn) => fn.ranges[0].count > 0))
    .map((script) => `src/${relative(`${root}dist`, fileURLToPath(script.url)).replace(/\.js$/, '.ts')}`)
    .sort()
}

const only = argument('--only')
if (only !== undefined && !(only in COMBINATIONS)) throw new Error(`--only: one of ${Object.keys(COMBINATIONS).join(', ')}`)
const pool = new pg.Pool({ connectionString: PG_URL, max: 2, connectionTimeoutMillis: 10_000 })
pool.on('error', () => {})
const paths = {}
try {
  for (const [name, { start }] of Object.entries(COMBINATIONS)) {
    if (only !== undefined && name !== only) continue
    const combination = await start(pool)
    try {
      paths[name] = await measure(combination)
    } finally {
      await combination.close()
    }
  }
} finally {
  if (givenSchema === undefined) await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
  await pool.end()
}
if (process.argv.includes('--json')) console.log(JSON.stringify(paths))
else if (process.argv.includes('--docs')) writeDocs(paths)
else {
  for (const [name, files] of Object.entries(paths)) {
    console.log(`${name} (${COMBINATIONS[name].label}): ${files.length} files`)
    for (const file of files) console.log(`  ${file}`)
  }
}

/**
 * Writes each path into docs/architecture.md: its block, the files grouped by folder (a
 * store by its own folder) and wrapped at 90 columns, and the counts in the sentence
 * before it.
 */
function writeDocs(paths) {
  const page = new URL('../docs/architecture.md', import.meta.url)
  let text = readFileSync(page, 'utf8')
  for (const [name, files] of Object.entries(paths)) {
    const start = `<!-- request-path: ${name} -->\n`
    const end = `<!-- /request-path: ${name} -->`
    const from = text.indexOf(start)
    const to = text.indexOf(end)
    if (from === -1 || to === -1) throw new Error(`docs/architecture.md has no block ${start.trim()}`)
    text = text.slice(0, from + start.length) + listed(files) + text.slice(to)
    const counts = [...text.slice(0, from).matchAll(/crosses\s+\d+\s+files,\s+\d+\s+of\s+them\s+outside/g)].at(-1)
    if (counts === undefined) throw new Error(`docs/architecture.md says nothing of the count before ${start.trim()}`)
    const outside = files.filter((file) => !file.startsWith('src/stores/')).length
    const sentence = counts[0].replace(/\d+(\s+files,\s+)\d+/, `${files.length}$1${outside}`)
    text = text.slice(0, counts.index) + sentence + text.slice(counts.index + counts[0].length)
  }
  writeFileSync(page, text)
}

function listed(files) {
  const groups = new Map()
  for (const file of files) {
    const parts = file.split('/')
    const group = parts[1] === 'stores' ? parts.slice(1, 3).join('/') : parts[1]
    groups.set(group, [...(groups.get(group) ?? []), file])
  }
  const lines = []
  for (const [group, members] of groups) {
    let line = `- ${group}:`
    members.forEach((file, i) => {
      const word = `\`${file}\`${i < members.length - 1 ? ',' : ''}`
      if (line.length + 1 + word.length > 90) {
        lines.push(line)
        line = `  ${word}`
      } else line += ` ${word}`
    })
    lines.push(line)
  }
  return `${lines.join('\n')}\n`
}

