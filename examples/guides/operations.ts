// Operating idem against a real Postgres with the `idem` command, as a cron job or an
// on-call engineer would: migrate, serve some traffic, then stats, prune, inspect and
// reconcile, each with the exit code a scheduler sees.
// DATABASE_URL=postgres://postgres@127.0.0.1:5432/test node --experimental-strip-types examples/guides/operations.ts
import { execFile, type ExecFileException } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { serve } from '@hono/node-server'
import { Hono } from 'hono'
import pg from 'pg'
import { createIdem } from 'idem'
import { reconcile } from 'idem/data'
import { idempotency, type IdemVariables } from 'idem/hono'
import { postgresDialect, postgresStore, type PgClient } from 'idem/postgres'
import { prometheusMetrics } from 'idem/prometheus'

// The installed package's bin: the program `npx idem` runs. Each call is a child process,
// as from a shell or a CronJob: its exit code is part of the answer.
const manifest = import.meta.resolve('idem/package.json')
const bin = fileURLToPath(new URL(JSON.parse(readFileSync(new URL(manifest), 'utf8')).bin.idem, manifest))
const run = promisify(execFile)
async function idem(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout } = await run(process.execPath, [bin, ...args])
    return { code: 0, stdout: stdout.trim(), stderr: '' }
  } catch (error) {
    const failed = error as ExecFileException & { stdout: string; stderr: string } // what a failed execFile rejects with
    if (typeof failed.code !== 'number') throw error
    return { code: failed.code, stdout: failed.stdout.trim(), stderr: failed.stderr.trim() }
  }
}

/** Each line of a command's output, indented under its exit code. */
const indented = (text: string) => text.split('\n').map((line) => `  ${line}`).join('\n')

const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
// A schema of its own, so that runs side by side never meet; dropped at the end.
const schema = `guide_operations_${randomBytes(4).toString('hex')}`
const db = ['--postgres', url, '--schema', schema]
const pool = new pg.Pool({ connectionString: url, connectionTimeoutMillis: 5_000 })
pool.on('error', (error) => console.warn(error))
await pool.query(`CREATE SCHEMA ${schema}`)
const { registry } = prometheusMetrics({ stores: ['postgres'] }) // served as the service's /metrics below

try {
  // 1. The tables, created by the CLI (a deploy step, or an init container).
  const migrated = await idem('migrate', ...db)
  console.log(`idem migrate: exit ${migrated.code}\n${indented(migrated.stdout)}`)

  // 2. A service: payments behind the middleware, with its metrics on /metrics.
  await pool.query(`CREATE TABLE ${schema}.payments (id bigserial PRIMARY KEY, account text NOT NULL, payment_key text NOT NULL, amount int NOT NULL)`)
  const store = postgresStore({ pool, schema })
  const app = new Hono<{ Variables: IdemVariables<PgClient> }>()
  app.get('/metrics', async (c) => c.text(await registry.metrics(), 200, { 'content-type': registry.contentType }))
  app.use('/payments', idempotency({ store, scope: (c) => c.req.header('authorization') ?? 'anonymous' }))
  app.post('/payments', async (c) => {
    const { amount } = await c.req.json<{ amount: number }>()
    const { tx, scope, key } = c.get('idem')!
    await tx.query(`INSERT INTO ${schema}.payments (account, payment_key, amount) VALUES ($1, $2, $3)`, [scope, key, amount])
    return c.json({ amount }, 201)
  })
  const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' })
  await new Promise((ready) => server.once('listening', ready))
  const service = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  try {
    // Three payments, a client retrying one that succeeded, and one reusing a key for another amount.
    const answers = []
    for (const [key, amount] of [['pay-1', 1500], ['pay-2', 2500], ['pay-3', 990], ['pay-1', 1500], ['pay-2', 9999]]) {
      const response = await fetch(`${service}/payments`, {
        method: 'POST',
        headers: { authorization: 'acct_42', 'idempotency-key': `"${key}"`, 'content-type': 'application/json' },
        body: JSON.stringify({ amount }),
      })
      answers.push(`${key} ${response.status}${response.headers.get('idempotent-replayed') === 'true' ? ' (replayed)' : ''}`)
    }
    console.log(`the service answered: ${answers.join(', ')}`)

    // Engine calls of a nightly job whose keys are kept for 1 ms: expired at once, awaiting prune.
    const jobs = createIdem({ store })
    for (const night of ['2025-01-01', '2025-01-02', '2025-01-03']) {
      await jobs.run({ scope: 'nightly-report', key: night, input: { night }, ttlMs: 1 }, () => ({ sent: true }))
    }
    await new Promise((resolve) => setTimeout(resolve, 20))
    console.log('a nightly job stored 3 keys kept for 1 ms')

    // 3. stats: the tables' counts, and the replay and conflict rates from the service's /metrics.
    const stats = await idem('stats', ...db, '--metrics', `${service}/metrics`, '--json')
    const { keys, requests } = JSON.parse(stats.stdout)
    const pct = (rate: number) => `${(rate * 100).toFixed(1)}%`
    console.log(`idem stats --metrics <service>/metrics --json: exit ${stats.code}`)
    console.log(`  keys ${keys.total} (${keys.live} live, ${keys.expired} expired awaiting prune); by stored status ${JSON.stringify(keys.byStatus)}`)
    console.log(`  requests ${requests.total}: replay rate ${pct(requests.replayRate)}, conflict rate ${pct(requests.conflictRate)}`)
  } finally {
    server.close()
  }

  // 4. prune: deletes the expired keys in batches of 2; the live ones stay.
  const pruned = await idem('prune', ...db, '--batch-size', '2', '--json')
  const { deleted, batches } = JSON.parse(pruned.stdout)
  const after = JSON.parse((await idem('stats', ...db, '--json')).stdout).keys
  console.log(`idem prune --batch-size 2 --json: exit ${pruned.code}`)
  console.log(`  deleted ${deleted} in ${batches} statements; keys now ${after.total} (${after.live} live, ${after.expired} expired)`)

  // 5. inspect: a live key (times shown as <time>), then a pruned one (exit 1).
  const shown = (stdout: string) => stdout.replace(/ \(--postgres [^)]*\)/, '').replace(/\S+Z \(\d[^)]* ago\)/g, '<time> (<age> ago)').replace(/\d{4}-\S+Z/g, '<time>')
  const live = await idem('inspect', 'acct_42', 'pay-1', ...db)
  console.log(`idem inspect acct_42 pay-1: exit ${live.code}\n${shown(live.stdout)}`)
  const gone = await idem('inspect', 'nightly-report', '2025-01-01', ...db)
  console.log(`idem inspect nightly-report 2025-01-01: exit ${gone.code}\n${shown(gone.stdout)}`)

  // 6. reconcile: clean, then after a backfill script wrote pay-1 again behind idem's back.
  const check = ['--table', 'payments', '--columns', 'account,payment_key']
  const clean = await idem('reconcile', ...db, ...check)
  console.log(`idem reconcile --table payments --columns account,payment_key: exit ${clean.code}\n  ${clean.stdout}`)
  await pool.query(`INSERT INTO ${schema}.payments (account, payment_key, amount) SELECT account, payment_key, amount FROM ${schema}.payments WHERE payment_key = 'pay-1'`)
  const dirty = await idem('reconcile', ...db, ...check)
  console.log(`after a backfill wrote pay-1 again: exit ${dirty.code}\n  ${dirty.stdout.replaceAll('\n', '\n  ')}`)

  // The same check run in a process that exports metrics sets the gauge IdemReconcileDuplicates reads.
  await reconcile({ dialect: postgresDialect, client: pool, schema, table: 'payments', columns: ['account', 'payment_key'] })
  const gauge = (await registry.metrics()).split('\n').find((line) => line.startsWith('idem_reconcile_duplicate_ratio{'))
  console.log(`reconcile() in the service, on its /metrics: ${gauge}`)

  // 7. A mistake: exit 2, its cause and a suggestion on stderr.
  const typo = await idem('prune', ...db, '--batch-sise', '500')
  console.log(`idem prune --batch-sise 500: exit ${typo.code}\n  ${typo.stderr.split('\n').slice(0, 2).join('\n  ')}`)
} finally {
  await pool.query(`DROP SCHEMA ${schema} CASCADE`)
  await pool.end()
}
