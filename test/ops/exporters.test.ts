import { Registry } from 'prom-client'
import { afterEach, describe, expect, it } from 'vitest'
import { createIdem } from '../../src/core/engine.js'
import { createEventStream } from '../../src/core/events.js'
import { fingerprintValue } from '../../src/core/json-data.js'
import { createLeasedIdem } from '../../src/core/leased/engine.js'
import { reconcile } from '../../src/data/reconcile.js'
import { idempotency } from '../../src/http/handler.js'
import { METRICS, prometheusNames } from '../../src/ops/catalog.js'
import { openTelemetryMetrics } from '../../src/ops/opentelemetry.js'
import { prometheusMetrics } from '../../src/ops/prometheus.js'
import { memoryStore } from '../../src/stores/memory/index.js'
import { sqliteDialect } from '../../src/stores/sqlite/index.js'
import { memoryLeasedStore } from '../../src/stores/memory/leased.js'
import Database from 'better-sqlite3'
import { withLeases } from '../support/leases.js'
import { otelInMemory, otelValue, promValue } from '../support/metrics.js'

const stops: (() => unknown)[] = []
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop()
})

function both(options: { stores?: string[]; consumers?: string[] } = {}) {
  const events = createEventStream()
  const registry = new Registry()
  const prom = prometheusMetrics({ registry, events, ...options })
  const otel = otelInMemory()
  const exporter = openTelemetryMetrics({ meter: otel.meter, events, ...options })
  stops.push(() => prom.stop(), () => exporter.stop(), () => otel.shutdown())
  return { events, registry, otel }
}

const post = (key: string | undefined, body: unknown) =>
  new Request('http://x/orders', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key === undefined ? {} : { 'idempotency-key': key }) },
    body: JSON.stringify(body),
  })

describe('the exporters', () => {
  it('start every counter with fixed labels at 0, and a named store or consumer before its first event', async () => {
    const { registry, otel } = both({ stores: ['postgres'], consumers: ['billing'] })
    const text = await registry.metrics()
    for (const outcome of ['fresh', 'replayed', 'mismatch', 'missing-key', 'store-unavailable']) {
      expect(promValue(text, 'idem_http_requests_total', { outcome })).toBe(0)
    }
    expect(promValue(text, 'idem_calls_total', { engine: 'leased', store: 'postgres', outcome: 'replayed' })).toBe(0)
    expect(promValue(text, 'idem_store_errors_total', { store: 'postgres', operation: 'begin' })).toBe(0)
    expect(promValue(text, 'idem_inbox_messages_total', { consumer: 'billing', status: 'duplicate' })).toBe(0)
    expect(promValue(text, 'idem_dead_letters_total', { source: 'outbox' })).toBe(0)
    expect(promValue(text, 'idem_lease_takeovers_total', { store: 'postgres' })).toBe(0)
    expect(promValue(text, 'idem_outbox_lag_seconds')).toBe(0)
    const points = await otel.read()
    expect(otelValue(points.get('idem.http.requests'), { outcome: 'mismatch' })).toBe(0)
    expect(otelValue(points.get('idem.inbox.messages'), { consumer: 'billing', status: 'failed' })).toBe(0)
  })

  it('count HTTP answers by outcome and time the store round trips, alike in Prometheus and OpenTelemetry', async () => {
    const { events, registry, otel } = both()
    const store = memoryStore()
    const protect = idempotency({ store, events, scope: () => 'acct' })
    const route = async () => Response.json({ ok: true }, { status: 201 })
    expect((await protect(post('"a"', { n: 1 }), route)).status).toBe(201)
    expect((await protect(post('"a"', { n: 1 }), route)).status).toBe(201) // replayed
    expect((await protect(post('"a"', { n: 1 }), route)).status).toBe(201) // replayed
    expect((await protect(post('"a"', { n: 2 }), route)).status).toBe(422)
    expect((await protect(post(undefined, {}), route)).status).toBe(400)
    expect((await protect(post('"bad key with spaces', {}), route)).status).toBe(400)
    expect((await protect(post('"b"', {}), async () => new Response('down', { status: 502 }))).status).toBe(502)
    store.close()
    expect((await protect(post('"c"', {}), route)).status).toBe(503)

    const text = await registry.metrics()
    const expected = { fresh: 1, replayed: 2, mismatch: 1, 'missing-key': 1, 'invalid-key': 1, 'not-stored': 1, 'store-unavailable': 1, 'in-flight': 0 }
    const points = await otel.read()
    for (const [outcome, n] of Object.entries(expected)) {
      expect(promValue(text, 'idem_http_requests_total', { outcome }), outcome).toBe(n)
      expect(otelValue(points.get('idem.http.requests'), { outcome }), outcome).toBe(n)
    }
    // Every call began a transaction; two committed (the fresh one; the 502 rolled back); one begin failed.
    expect(promValue(text, 'idem_store_round_trip_seconds_count', { store: 'memory', operation: 'begin' })).toBe(6)
    expect(promValue(text, 'idem_store_round_trip_seconds_count', { store: 'memory', operation: 'commit' })).toBe(1)
    expect(promValue(text, 'idem_store_errors_total', { store: 'memory', operation: 'begin' })).toBe(1)
    expect(otelValue(points.get('idem.store.round_trip'), { store: 'memory', operation: 'begin' })).toBe(6)
    expect(promValue(text, 'idem_calls_total', { engine: 'transactional', store: 'memory', outcome: 'replayed' })).toBe(2)
  })

  it('count leased takeovers, lost leases and fenced writes', async () => {
    const { events, registry, otel } = both()
    const store = memoryLeasedStore()
    // A holder that crashed: its claim is never renewed, so its lease runs out and the retry, polling, takes over.
    await store.claim('s', 'crashed', fingerprintValue(1), 20, 60_000)
    const idem = createLeasedIdem({ store, events, waitMs: 5_000 })
    expect((await idem.run({ scope: 's', key: 'crashed', input: 1 }, () => 'done')).value).toBe('done')
    // A holder that crashed after saving a step: once its lease ran out, the retry resumes the step.
    const held = await store.claim('s', 'resumed', fingerprintValue(2), 20, 60_000)
    if (held.state !== 'acquired') throw new Error('expected to claim the key')
    await held.lease.saveStep('charge', '"ch_1"')
    await new Promise((resolve) => setTimeout(resolve, 40))
    let charges = 0
    await idem.run({ scope: 's', key: 'resumed', input: 2 }, (ctx) => ctx.step('charge', () => ++charges))
    expect(charges).toBe(0)
    // A store that refuses the outcome: another call holds the key now.
    const fenced = createLeasedIdem({ store: withLeases(store, () => ({ complete: async () => false })), events })
    await expect(fenced.run({ scope: 's', key: 'fenced', input: 1 }, () => 'x')).rejects.toThrow(/another call took the key over/)
    await idem.run({ scope: 's', key: 'plain', input: 1 }, () => 'y')

    const text = await registry.metrics()
    expect(promValue(text, 'idem_lease_takeovers_total', { store: 'memory' })).toBe(2)
    expect(promValue(text, 'idem_fenced_writes_total', { store: 'memory' })).toBe(1)
    expect(promValue(text, 'idem_lease_lost_total', { store: 'memory' })).toBe(1)
    expect(promValue(text, 'idem_calls_total', { engine: 'leased', store: 'memory', outcome: 'lease-lost' })).toBe(1)
    expect(promValue(text, 'idem_store_round_trip_seconds_count', { store: 'memory', operation: 'complete' })).toBe(4)
    const points = await otel.read()
    expect(otelValue(points.get('idem.lease.takeovers'), { store: 'memory' })).toBe(2)
    expect(otelValue(points.get('idem.lease.fenced_writes'), { store: 'memory' })).toBe(1)
  })

  it("set the reconcile job's duplicate ratio as a gauge per table", async () => {
    const { events, registry, otel } = both()
    const db = new Database(':memory:')
    db.exec("CREATE TABLE summaries (claim_id TEXT); INSERT INTO summaries VALUES ('a'), ('a'), ('b'), ('c')")
    await reconcile({ dialect: sqliteDialect, client: db, table: 'summaries', columns: ['claim_id'], events })
    const text = await registry.metrics()
    expect(promValue(text, 'idem_reconcile_duplicate_ratio', { table: 'summaries' })).toBe(0.25)
    expect(promValue(text, 'idem_reconcile_duplicate_rows', { table: 'summaries' })).toBe(1)
    expect(otelValue((await otel.read()).get('idem.reconcile.duplicate_ratio'), { table: 'summaries' })).toBe(0.25)
    db.close()
  })

  it('set gauges on @opentelemetry/api before 1.9 too (no synchronous gauge): the last value, observed', async () => {
    const events = createEventStream()
    const otel = otelInMemory()
    const sdk = otel.meter
    // The Meter of API 1.3–1.8: everything but createGauge (added in 1.9).
    const older = {
      createCounter: sdk.createCounter.bind(sdk),
      createUpDownCounter: sdk.createUpDownCounter.bind(sdk),
      createHistogram: sdk.createHistogram.bind(sdk),
      createObservableGauge: sdk.createObservableGauge.bind(sdk),
      createObservableCounter: sdk.createObservableCounter.bind(sdk),
      createObservableUpDownCounter: sdk.createObservableUpDownCounter.bind(sdk),
      addBatchObservableCallback: sdk.addBatchObservableCallback.bind(sdk),
      removeBatchObservableCallback: sdk.removeBatchObservableCallback.bind(sdk),
    }
    const exporter = openTelemetryMetrics({ meter: older as never, events })
    stops.push(() => exporter.stop(), () => otel.shutdown())
    const db = new Database(':memory:')
    db.exec("CREATE TABLE summaries (claim_id TEXT); INSERT INTO summaries VALUES ('a'), ('a'), ('b'), ('c')")
    await reconcile({ dialect: sqliteDialect, client: db, table: 'summaries', columns: ['claim_id'], events })
    expect(otelValue((await otel.read()).get('idem.reconcile.duplicate_ratio'), { table: 'summaries' })).toBe(0.25)
    db.exec("DELETE FROM summaries WHERE rowid = 1")
    await reconcile({ dialect: sqliteDialect, client: db, table: 'summaries', columns: ['claim_id'], events })
    expect(otelValue((await otel.read()).get('idem.reconcile.duplicate_ratio'), { table: 'summaries' })).toBe(0)
    db.close()
  })

  it('emit exactly the catalogued names, and nothing is built while nobody listens', async () => {
    const { registry } = both()
    const names = new Set((await registry.getMetricsAsJSON()).map((m) => m.name))
    expect([...names].sort()).toEqual(prometheusNames().sort())
    expect(Object.keys(METRICS).length).toBe(names.size)
    const quiet = createEventStream()
    expect(quiet.listening).toBe(false)
    const idem = createIdem({ store: memoryStore(), events: quiet })
    await idem.run({ scope: 's', key: 'k', input: 1 }, () => 1)
  })

  it('refuse bad options at creation, naming them', () => {
    expect(() => prometheusMetrics({ registry: {} as never, events: createEventStream() })).toThrow(/option "registry"/)
    expect(() => prometheusMetrics({ prefix: 'bad-prefix', registry: new Registry(), events: createEventStream() })).toThrow(/option "prefix"/)
    expect(() => prometheusMetrics({ stores: 'postgres' as never, registry: new Registry() })).toThrow(/option "stores"/)
    const registry = new Registry()
    const first = prometheusMetrics({ registry, events: createEventStream() })
    expect(() => prometheusMetrics({ registry, events: createEventStream() })).toThrow(/already has idem_http_requests_total: call prometheusMetrics once per registry/)
    first.stop()
    prometheusMetrics({ registry, events: createEventStream() }).stop()
    expect(() => openTelemetryMetrics({ meter: {} as never })).toThrow(/option "meter"/)
    expect(() => openTelemetryMetrics({ events: {} as never })).toThrow(/option "events"/)
    expect(() => openTelemetryMetrics({ consumer: ['x'] } as never)).toThrow(/consumer.*consumers/)
  })
})
