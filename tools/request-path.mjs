// Lists the files of idem whose code runs while one fresh request is answered: the Fetch
// middleware on the Postgres store, after warm-up requests (so nothing made once is
// counted), measured by V8's precise coverage of that one request.
// Usage: node tools/request-path.mjs [--json] [--schema NAME]   (needs a built dist/ and
// Postgres; without --schema it makes a schema of its own and drops it)
import { Session } from 'node:inspector/promises'
import { fileURLToPath } from 'node:url'
import { relative } from 'node:path'
import pg from 'pg'
import { idempotency } from '../dist/http/fetch/index.js'
import { postgresStore } from '../dist/stores/postgres/index.js'

const root = fileURLToPath(new URL('..', import.meta.url))
const given = process.argv.indexOf('--schema')
const schema = given > 0 ? process.argv[given + 1] : `request_path_${process.pid}`
const pool = new pg.Pool({ connectionString: process.env.IDEM_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test', max: 2, connectionTimeoutMillis: 10_000 })
pool.on('error', () => {})
try {
  const store = postgresStore({ pool, schema })
  await store.migrate()
  const protect = idempotency({ store, scope: () => 'tenant' })
  let n = 0
  const fresh = async () => {
    const request = new Request('http://localhost/orders', { method: 'POST', headers: { 'idempotency-key': `key-${++n}`, 'content-type': 'application/json' }, body: '{"amount":1}' })
    const response = await protect(request, async () => Response.json({ ok: true }, { status: 201 }))
    if (response.status !== 201) throw new Error(`a fresh request answered ${response.status}`)
  }
  for (let i = 0; i < 20; i++) await fresh()

  const session = new Session()
  session.connect()
  await session.post('Profiler.enable')
  await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false })
  await session.post('Profiler.takePreciseCoverage') // resets the counts
  await fresh()
  const { result } = await session.post('Profiler.takePreciseCoverage')
  await session.post('Profiler.stopPreciseCoverage')
  session.disconnect()

  const files = result
    .filter((script) => script.url.startsWith('file://') && fileURLToPath(script.url).startsWith(`${root}dist/`))
    .filter((script) => script.functions.some((fn) => fn.ranges[0].count > 0))
    .map((script) => relative(`${root}dist`, fileURLToPath(script.url)).replace(/\.js$/, '.ts'))
    .sort()
  if (process.argv.includes('--json')) console.log(JSON.stringify(files))
  else {
    for (const file of files) console.log(`src/${file}`)
    console.log(`${files.length} files`)
  }
} finally {
  if (given < 0) await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
  await pool.end()
}
