import { serve } from '@hono/node-server'
import { execFile } from 'node:child_process'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { EventStream } from '../../src/core/events.js'
import { openTelemetryMetrics } from '../../src/ops/opentelemetry.js'
import { startTcpFaultProxy, type TcpFaultProxy } from '../../src/testing/tcp-proxy.js'
import { otelInMemory, otelValue, promValue } from '../support/metrics.js'
import { PG_URL, testSchema, type TestSchema } from '../support/postgres.js'

const run = promisify(execFile)
const root = new URL('../..', import.meta.url).pathname
const cli = join(root, 'dist/cli/idem.js')
const db = await testSchema('idem_traffic', 2)

// The example's modules are plain JavaScript; their shapes are what this test uses of them.
interface Service {
  app: { fetch: (request: Request) => Promise<Response> }
  events: EventStream
  workOnce(): Promise<boolean>
  reconcileNow(): Promise<unknown>
}
interface Database {
  close(): Promise<void>
}

describe.skipIf(db === undefined)('known traffic, read back from /metrics, from the OTel in-memory exporter and from idem stats --json', () => {
  const { schema } = db as TestSchema
  let proxy: TcpFaultProxy
  let database: Database
  let service: Service
  let server: ReturnType<typeof serve>
  let base: string
  const otel = otelInMemory()

  beforeAll(async () => {
    const target = new URL(PG_URL)
    proxy = await startTcpFaultProxy({ target: `${target.hostname}:${target.port || 5432}` })
    const viaProxy = new URL(PG_URL)
    viaProxy.hostname = proxy.host
    viaProxy.port = String(proxy.port)
    const { openDatabase } = (await import(join(root, 'examples/claims-intake/database.mjs'))) as { openDatabase: (where: object) => Promise<Database> }
    const { createService } = (await import(join(root, 'examples/claims-intake/service.mjs'))) as { createService: (options: object) => Service }
    database = await openDatabase({ url: viaProxy.href, schema })
    // The seed incident: claim-dup's first delivery crashes after its commit, before the ack.
    service = createService({ mode: 'idem', database, incidentClaim: 'claim-dup' })
    openTelemetryMetrics({ meter: otel.meter, events: service.events, stores: ['postgres'], consumers: ['claims-intake-worker'] })
    server = serve({ fetch: service.app.fetch, hostname: '127.0.0.1', port: 0 })
    await new Promise((ready) => server.once('listening', ready))
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  afterAll(async () => {
    await new Promise((closed) => server?.close(closed))
    await database?.close()
    await proxy?.close()
    await otel.shutdown()
    await db?.drop()
  })

  it('counts every replay, conflict, bad key and 503 exactly, in all three', async () => {
    const post = (path: string, key: string | string[] | undefined, body: unknown) =>
      fetch(`${base}${path}`, {
        method: 'POST',
        headers: [
          ['authorization', 'Bearer acct_t'],
          ['content-type', 'application/json'],
          ...(key === undefined ? [] : (Array.isArray(key) ? key : [key]).map((k): [string, string] => ['idempotency-key', k])),
        ],
        body: JSON.stringify(body),
      })
    const order = (amount: number) => ({ amount, currency: 'eur', customer: 't' })
    const statuses: number[] = []
    const send = async (path: string, key: string | string[] | undefined, body: unknown, status: number) => {
      const response = await post(path, key, body)
      statuses.push(response.status)
      expect(response.status, `${path} ${String(key)}`).toBe(status)
      return response
    }

    for (let i = 1; i <= 10; i++) await send('/orders', `"t-${i}"`, order(100), 201) // 10 fresh
    for (let i = 1; i <= 4; i++) expect((await send('/orders', `"t-${i}"`, order(100), 201)).headers.get('idempotent-replayed')).toBe('true') // 4 replays
    for (let i = 5; i <= 7; i++) await send('/orders', `"t-${i}"`, order(999), 422) // 3 conflicts
    await send('/orders', undefined, order(100), 400) // missing key
    await send('/orders', undefined, order(100), 400) // missing key
    await send('/orders', '"has space"', order(100), 400) // invalid key
    await send('/orders', ['"a"', '"b"'], order(100), 400) // two keys: invalid
    // The store goes away: open connections are cut and new ones refused.
    proxy.refuse(true)
    proxy.cut({ reset: true })
    await send('/orders', '"t-out-1"', order(100), 503)
    await send('/orders', '"t-out-2"', order(100), 503)
    proxy.refuse(false)
    await send('/orders', '"t-11"', order(100), 201)
    await send('/orders', '"t-12"', order(100), 201)
    await send('/claims', '"claim-dup"', { claimId: 'claim-dup', document: 'one two three four five six seven eight' }, 202)
    // The worker: the claim is processed, its first delivery "crashes" before the ack, the redelivery is a duplicate.
    for (let i = 0; i < 20 && (await service.workOnce()); i++);
    await service.reconcileNow()

    const expected = { fresh: 13, replayed: 4, mismatch: 3, 'missing-key': 2, 'invalid-key': 2, 'store-unavailable': 2, 'in-flight': 0, 'not-stored': 0, error: 0 }
    const metrics = await (await fetch(`${base}/metrics`)).text()
    const points = await otel.read()
    for (const [outcome, n] of Object.entries(expected)) {
      expect(promValue(metrics, 'idem_http_requests_total', { outcome }), `/metrics ${outcome}`).toBe(n)
      expect(otelValue(points.get('idem.http.requests'), { outcome }), `OTel ${outcome}`).toBe(n)
    }
    const inbox = { consumer: 'claims-intake-worker' }
    expect(promValue(metrics, 'idem_inbox_messages_total', { ...inbox, status: 'processed' })).toBe(1)
    expect(promValue(metrics, 'idem_inbox_messages_total', { ...inbox, status: 'duplicate' })).toBe(1)
    expect(otelValue(points.get('idem.inbox.messages'), { ...inbox, status: 'duplicate' })).toBe(1)
    expect(promValue(metrics, 'idem_outbox_deliveries_total', { outcome: 'delivered' })).toBe(2) // the intake job and the email
    expect(otelValue(points.get('idem.outbox.deliveries'), { outcome: 'delivered' })).toBe(2)
    expect(promValue(metrics, 'idem_store_errors_total', { store: 'postgres', operation: 'begin' })).toBe(2)
    expect(otelValue(points.get('idem.store.errors'), { store: 'postgres', operation: 'begin' })).toBe(2)
    expect(promValue(metrics, 'idem_reconcile_duplicate_ratio', { table: 'summaries' })).toBe(0)
    expect(otelValue(points.get('idem.reconcile.duplicate_ratio'), { table: 'chunks' })).toBe(0)
    expect(promValue(metrics, 'idem_dead_letters_total', { source: 'inbox' })).toBe(0)

    // idem stats: what the database holds (12 orders and a claim stored, nothing for the
    // 503s, the 400s or the 422s), and the rates from the same /metrics.
    const { stdout } = await run(process.execPath, [cli, 'stats', '--postgres', PG_URL, '--schema', schema, '--metrics', `${base}/metrics`, '--json'])
    const stats = JSON.parse(stdout)
    expect(stats.keys.byStatus).toEqual({ '201': 12, '202': 1, other: 1 }) // other: the memoised LLM summary
    expect(stats.keys).toMatchObject({ recent: 14, live: 14, expired: 0 })
    expect(stats.inbox).toMatchObject({ live: 1 })
    expect(stats.outbox).toMatchObject({ pending: 0, delivered: 2 })
    expect(stats.requests.byOutcome).toMatchObject(expected)
    const protectedRequests = statuses.length
    expect(stats.requests.total).toBe(protectedRequests)
    expect(stats.requests.replayRate).toBeCloseTo(4 / protectedRequests, 12)
    expect(stats.requests.conflictRate).toBeCloseTo(3 / protectedRequests, 12)
    expect(stats.requests.badKeyRate).toBeCloseTo(4 / protectedRequests, 12)
  })
})
