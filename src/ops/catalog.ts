/**
 * Every metric idem exports, once, for both exporters (`idem/prometheus`,
 * `idem/opentelemetry`), the shipped alert rules and the dashboard: one name per signal,
 * the same everywhere. A label is either a fixed set of values (its series exist, at 0,
 * from the start, so a rate is 0 rather than absent) or a name only known at run time (a
 * store, a consumer, a table), whose series start when the exporter is told the name
 * (`stores`, `consumers`) or first hears of it. Listed values are not written here: each
 * comes from the list its event declares, in the core (engine calls, store round trips)
 * or in the front end that reports it (http/, queue/).
 */
import { ENGINES, OUTCOME_KINDS, STORE_OPERATIONS } from '../core/events.js'
import { HTTP_OUTCOMES, WEBHOOK_SIGNATURES, WEBHOOK_STATUSES } from '../http/events.js'
import { DEAD_LETTER_SOURCES, DISPATCH_OUTCOMES, INBOX_STATUSES } from '../queue/events.js'

/** What a label's values are: listed (pre-initialised) or learned at run time. */
export type LabelValues = readonly string[] | 'store' | 'consumer' | 'table' | 'code'

/** One metric of the catalogue: its Prometheus and OpenTelemetry names, kind, help, unit, labels and buckets. */
export interface MetricSpec {
  /** The Prometheus name, without the prefix (`idem_` by default). */
  readonly name: string
  /** The OpenTelemetry instrument's name. */
  readonly otel: string
  readonly kind: 'counter' | 'gauge' | 'histogram'
  readonly help: string
  /** UCUM unit for OpenTelemetry (`s`, `1`, `{request}`). */
  readonly unit: string
  readonly labels: Readonly<Record<string, LabelValues>>
  /** Bucket bounds of a histogram, in its unit. */
  readonly buckets?: readonly number[]
}

const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

/** The catalogue of every metric idem exports: what the Prometheus and OpenTelemetry exporters register, and what the shipped alert rules and dashboard query. */
export const METRICS = {
  httpRequests: {
    name: 'http_requests_total',
    otel: 'idem.http.requests',
    kind: 'counter',
    unit: '{request}',
    help: 'Requests on routes the idempotency middleware covers, by how they were answered (fresh, replayed, missing-key/invalid-key 400, body-too-large 413, mismatch 422, in-flight 409, overran 503, store-unavailable 503, ...)',
    labels: { outcome: HTTP_OUTCOMES },
  },
  calls: {
    name: 'calls_total',
    otel: 'idem.calls',
    kind: 'counter',
    unit: '{call}',
    help: 'Engine calls (HTTP, memo, direct run) by outcome',
    labels: { engine: ENGINES, store: 'store', outcome: OUTCOME_KINDS },
  },
  callDuration: {
    name: 'call_duration_seconds',
    otel: 'idem.call.duration',
    kind: 'histogram',
    unit: 's',
    help: 'Time from an engine call to its outcome, the function included',
    labels: { engine: ENGINES, store: 'store' },
    buckets: LATENCY_BUCKETS,
  },
  storeRoundTrip: {
    name: 'store_round_trip_seconds',
    otel: 'idem.store.round_trip',
    kind: 'histogram',
    unit: 's',
    help: "Round trips of the engines to their store, by operation (begin, commit; claim, renew, step, complete, release)",
    labels: { store: 'store', operation: STORE_OPERATIONS },
    buckets: LATENCY_BUCKETS,
  },
  storeErrors: {
    name: 'store_errors_total',
    otel: 'idem.store.errors',
    kind: 'counter',
    unit: '{error}',
    help: 'Round trips to the store that failed (unreachable, timed out, tables missing), by operation',
    labels: { store: 'store', operation: STORE_OPERATIONS },
  },
  inboxMessages: {
    name: 'inbox_messages_total',
    otel: 'idem.inbox.messages',
    kind: 'counter',
    unit: '{message}',
    help: 'Messages settled by the inbox: processed, duplicate (redelivery absorbed), failed (will be redelivered), dead-lettered, in-flight, error (the store failed)',
    labels: { consumer: 'consumer', status: INBOX_STATUSES },
  },
  webhookDeliveries: {
    name: 'webhook_deliveries_total',
    otel: 'idem.webhook.deliveries',
    kind: 'counter',
    unit: '{delivery}',
    help: 'Deliveries to a webhook receiver, by signature (verified, refused, unchecked) and status: refused (nothing recorded), handshake (the provider checking the endpoint, nothing recorded), no-event-id, processed, duplicate (answered without running the handler), failed, dead-lettered, in-flight',
    labels: { consumer: 'consumer', signature: WEBHOOK_SIGNATURES, status: WEBHOOK_STATUSES },
  },
  outboxDeliveries: {
    name: 'outbox_deliveries_total',
    otel: 'idem.outbox.deliveries',
    kind: 'counter',
    unit: '{delivery}',
    help: 'Outbox deliveries by outcome: delivered, retried (failed, will be retried), dead-lettered, overdue (still running at the deadline)',
    labels: { outcome: DISPATCH_OUTCOMES },
  },
  outboxLag: {
    name: 'outbox_lag_seconds',
    otel: 'idem.outbox.lag',
    kind: 'gauge',
    unit: 's',
    help: "How long the oldest row claimed by the dispatcher's last round had waited since it was added (0 when nothing was due)",
    labels: {},
  },
  deadLetters: {
    name: 'dead_letters_total',
    otel: 'idem.dead_letters',
    kind: 'counter',
    unit: '{message}',
    help: 'Messages (inbox) and effects (outbox) given up on and kept as dead letters',
    labels: { source: DEAD_LETTER_SOURCES },
  },
  leaseTakeovers: {
    name: 'lease_takeovers_total',
    otel: 'idem.lease.takeovers',
    kind: 'counter',
    unit: '{lease}',
    help: 'Leased calls that claimed a key another call held without finishing (resumed its steps, or waited for it and then claimed the key)',
    labels: { store: 'store' },
  },
  leaseLost: {
    name: 'lease_lost_total',
    otel: 'idem.lease.lost',
    kind: 'counter',
    unit: '{lease}',
    help: 'Leased calls that ended without storing their outcome because their lease was lost or could not be confirmed',
    labels: { store: 'store' },
  },
  fencedWrites: {
    name: 'fenced_writes_total',
    otel: 'idem.lease.fenced_writes',
    kind: 'counter',
    unit: '{write}',
    help: "Writes the store refused because the writer's claim no longer held the key (another call took it over)",
    labels: { store: 'store' },
  },
  reconcileDuplicateRatio: {
    name: 'reconcile_duplicate_ratio',
    otel: 'idem.reconcile.duplicate_ratio',
    kind: 'gauge',
    unit: '1',
    help: 'Duplicate rows over all rows in the table, as found by the last reconcile run (alert above 0.0001 = 0.01%)',
    labels: { table: 'table' },
  },
  reconcileRows: {
    name: 'reconcile_rows',
    otel: 'idem.reconcile.rows',
    kind: 'gauge',
    unit: '{row}',
    help: 'Rows in the table at the last reconcile run',
    labels: { table: 'table' },
  },
  reconcileDuplicateRows: {
    name: 'reconcile_duplicate_rows',
    otel: 'idem.reconcile.duplicate_rows',
    kind: 'gauge',
    unit: '{row}',
    help: 'Rows beyond the first of each duplicate group at the last reconcile run',
    labels: { table: 'table' },
  },
  reconcileTimestamp: {
    name: 'reconcile_last_run_timestamp_seconds',
    otel: 'idem.reconcile.last_run',
    kind: 'gauge',
    unit: 's',
    help: 'When reconcile last ran on the table (Unix time), to alert on a job that stopped',
    labels: { table: 'table' },
  },
  warnings: {
    name: 'warnings_total',
    otel: 'idem.warnings',
    kind: 'counter',
    unit: '{warning}',
    help: "Warnings worth an operator's attention, by code",
    labels: { code: 'code' },
  },
} as const satisfies Record<string, MetricSpec>

/** The id of a metric in `METRICS`. */
export type MetricId = keyof typeof METRICS

/**
 * Every metric's Prometheus name (with the default prefix), for rule and dashboard checks.
 * @example
 * prometheusNames().includes('idem_http_requests_total') // true
 */
export function prometheusNames(prefix = 'idem_'): string[] {
  return Object.values(METRICS).map((metric) => `${prefix}${metric.name}`)
}
