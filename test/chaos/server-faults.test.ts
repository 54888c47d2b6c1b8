// Server faults under load: a Postgres cluster of the test's own stopped and started,
// backends terminated, connections cut by the TCP fault proxy, a Redis of the test's
// own killed and started. During the outage the service answers 503 with Retry-After
// (never a pass-through, never a 500, never a dead process); afterwards the clients,
// retrying with their keys, finish with every intent applied exactly once.
import { execFileSync, spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { readdirSync } from 'node:fs'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTcpFaultProxy } from '../../src/testing/index.js'
import { PG_URL, testSchema, type TestSchema } from '../support/postgres.js'
import { privateRedis, type PrivateRedis } from '../leased/support.js'
import { loadWithFault, type LoadResult } from './support/load.js'
import { freePort } from '../support/free-port.js'
import { prepareSchema, sleep, startService, type Mode, type Service, type ServiceConfig } from './support/service.js'
import { report, scale, type ChaosRow } from './support/table.js'

const INTENTS = scale(300, 2_000)
const CLIENTS = scale(20, 50)

/** A Postgres cluster of the test's own on a free port (pg_createcluster), so it may be stopped. */
interface PrivateCluster {
  name: string
  version: string
  port: number
  pool: pg.Pool
  ctl(action: 'start' | 'stop' | 'restart', ...options: string[]): void
  drop(): Promise<void>
}

async function privateCluster(): Promise<PrivateCluster | undefined> {
  if (spawnSync('sh', ['-c', 'command -v pg_createcluster']).status !== 0) {
    if (process.env.CI) throw new Error('pg_createcluster is required in CI for the Postgres restart scenario')
    console.warn('SKIPPED: pg_createcluster is not installed')
    return undefined
  }
  const version = readdirSync('/etc/postgresql').sort().at(-1)!
  const name = `idem_chaos_${randomBytes(3).toString('hex')}`
  const port = await freePort()
  execFileSync('pg_createcluster', [version, name, '-p', String(port), '--', '--auth-local=trust', '--auth-host=trust'], { stdio: 'ignore', timeout: 60_000 })
  const ctl = (action: string, ...options: string[]) =>
    void execFileSync('pg_ctlcluster', ['--skip-systemctl-redirect', version, name, action, ...options], { stdio: 'ignore', timeout: 60_000 })
  ctl('start')
  const pool = new pg.Pool({ host: '127.0.0.1', port, user: 'postgres', database: 'postgres', max: 4, connectionTimeoutMillis: 5_000 })
  pool.on('error', () => {})
  return {
    name,
    version,
    port,
    pool,
    ctl,
    async drop() {
      await pool.end().catch(() => {})
      execFileSync('pg_dropcluster', ['--stop', version, name], { stdio: 'ignore', timeout: 60_000 })
    },
  }
}

const db = await testSchema('idem_chaos_faults', 4)
const cluster = db === undefined ? undefined : await privateCluster()
const redis = db === undefined ? undefined : await privateRedis()

/** Every intent's effect exactly once, and its answer naming that effect. */
async function check(pool: pg.Pool, schema: string, mode: Mode, load: LoadResult): Promise<{ duplicates: number; lost: number }> {
  const table = mode.startsWith('leased') ? 'charges' : 'orders'
  const { rows } = await pool.query(`SELECT intent, count(*)::int AS n, min(id) AS id FROM "${schema}".${table} GROUP BY intent`)
  const byIntent = new Map(rows.map((row) => [row.intent as string, row as { n: number; id: number }]))
  let duplicates = 0
  let lost = 0
  for (const { intent, answer } of load.intents) {
    const row = byIntent.get(intent)
    if (row === undefined) lost++
    else {
      duplicates += row.n - 1
      if ((answer?.orderId ?? answer?.chargeId) !== row.id) duplicates++
    }
  }
  return { duplicates, lost }
}

async function scenario(
  task: Parameters<typeof report>[0],
  name: string,
  { pool, schema, config, fault, notes }: { pool: pg.Pool; schema: string; config: ServiceConfig; fault: (service: Service) => Promise<string>; notes?: string },
): Promise<ChaosRow> {
  const service = await startService(config)
  let described = ''
  const load = await loadWithFault({ url: service.url, intents: INTENTS, clients: CLIENTS, fault: async () => void (described = await fault(service)) }).catch((error: Error) => {
    // A service that died takes its reason with it: say what it wrote.
    throw service.alive() ? error : new Error(`${error.message}; the service ended, its stderr: ${service.fixture.stderr()}`)
  })
  const alive = service.alive()
  await service.stop()
  const { duplicates, lost } = await check(pool, schema, config.mode, load)
  const row: ChaosRow = {
    scenario: name,
    runs: INTENTS,
    unit: 'intents',
    duplicates,
    lost,
    unexpected5xx: load.unexpected5xx,
    crashes: alive ? 0 : 1,
    maxRecoveryMs: load.recoveryMs,
    notes: `${described}; ${load.attempts.toLocaleString('en-US')} attempts, ${load.unavailable} 503s with Retry-After, ${load.conflicts} 409s, ${load.replays} replays, ${load.cameBack} came back${notes ? `; ${notes}` : ''}`,
  }
  report(task, row)
  expect(alive, 'the service survived').toBe(true)
  expect({ duplicates, lost, unexpected5xx: load.unexpected5xx }).toEqual({ duplicates: 0, lost: 0, unexpected5xx: 0 })
  return row
}

describe.skipIf(db === undefined)('server faults under load', () => {
  const { pool, schema } = db as TestSchema
  const clusterSchema = `chaos_${randomBytes(3).toString('hex')}`
  beforeAll(async () => {
    await prepareSchema(pool, schema)
    if (cluster) {
      await cluster.pool.query(`CREATE SCHEMA "${clusterSchema}"`)
      await prepareSchema(cluster.pool, clusterSchema)
    }
  })
  afterAll(async () => {
    await cluster?.drop()
    await redis?.stop()
    await db?.drop()
  })

  it.skipIf(cluster === undefined)('Postgres (a cluster of its own) stopped mid-load and started again', async ({ task }) => {
    const row = await scenario(task, 'server: Postgres stopped (immediate) and restarted', {
      pool: cluster!.pool,
      schema: clusterSchema,
      config: { mode: 'postgres', schema: clusterSchema, pg: { host: '127.0.0.1', port: cluster!.port, database: 'postgres' } },
      fault: async () => {
        cluster!.ctl('stop', '-m', 'immediate')
        await sleep(1_500)
        cluster!.ctl('start')
        return `cluster ${cluster!.name} down 1.5 s`
      },
    })
    expect(row.notes).not.toContain(' 0 503s')
  }, 300_000)

  it('backends terminated with pg_terminate_backend', async ({ task }) => {
    const applicationName = `idem-chaos-${randomBytes(3).toString('hex')}`
    let terminated = 0
    await scenario(task, 'server: pg_terminate_backend, 5 times', {
      pool,
      schema,
      config: { mode: 'postgres', schema, pgUrl: PG_URL, applicationName },
      fault: async () => {
        for (let i = 0; i < 5; i++) {
          const { rows } = await pool.query('SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE application_name = $1', [applicationName])
          terminated += rows[0].n
          await sleep(200)
        }
        return `${terminated} backends terminated`
      },
    })
  }, 300_000)

  it('connections cut by the TCP fault proxy (FIN and RST)', async ({ task }) => {
    const proxy = await startTcpFaultProxy({ target: '127.0.0.1:5432' })
    try {
      await scenario(task, 'server: TCP cuts of every Postgres connection, 6 times', {
        pool,
        schema,
        config: { mode: 'postgres', schema, pg: { host: proxy.host, port: proxy.port, database: 'test' } },
        fault: async () => {
          for (let i = 0; i < 6; i++) {
            proxy.cut({ reset: i % 2 === 1 })
            await sleep(250)
          }
          return `${proxy.stats.cut} connections cut`
        },
      })
    } finally {
      await proxy.close()
    }
  }, 300_000)

  it.skipIf(redis === undefined)('Redis (a server of its own) killed mid-load and started again, leased mode', async ({ task }) => {
    await scenario(task, 'server: Redis killed and restarted (leased)', {
      pool,
      schema,
      config: { mode: 'leased-redis', schema, pgUrl: PG_URL, redisUrl: redis!.url, prefix: 'idem-chaos:', leaseMs: 2_000 },
      fault: async () => {
        await redis!.stop()
        await sleep(1_500)
        await redis!.start()
        return 'Redis down 1.5 s, no persistence'
      },
      notes: 'Redis forgot every key: retries after it ran again and the provider deduped them by derive(key)',
    })
  }, 300_000)
})
