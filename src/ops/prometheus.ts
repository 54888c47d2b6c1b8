import { Counter, Gauge, Histogram, register as globalRegistry, type Registry } from 'prom-client'
import { InvalidOptionError } from '../core/errors/invalid-option.js'
import { optionNames, shown } from '../core/errors/option-checks.js'
import { METRICS, type MetricId } from './catalog.js'
import { checkExporterOptions, type ExporterOptions } from './options.js'
import { eventRecorder, type Labels } from './recorder.js'

/** What `prometheusMetrics` takes: the registry, the name prefix, and the stores and consumers to pre-initialise series for. */
export interface PrometheusMetricsOptions extends ExporterOptions {
  /** The prom-client registry to register on. @default prom-client's global registry */
  registry?: Registry
  /** Prepended to every metric's name; the shipped alert rules and dashboard expect the default. @default 'idem_' */
  prefix?: string
}

/** The running exporter: its registry, and how to stop it. */
export interface PrometheusMetrics {
  /** The registry the metrics are on: serve `await registry.metrics()` as `/metrics`. */
  readonly registry: Registry
  /** Unsubscribes from the event stream and removes the metrics from the registry. */
  stop(): void
}

type Metric = Counter<string> | Gauge<string> | Histogram<string>

const OPTIONS = optionNames<PrometheusMetricsOptions>({ events: true, stores: true, consumers: true, registry: true, prefix: true })

/**
 * Prometheus metrics for everything idem does, fed by the event stream (so every front
 * end is counted: HTTP, engines, inbox, outbox, leases, reconcile), on prom-client (an
 * optional peer dependency: `npm i prom-client`). The names are those of
 * `ops/prometheus/alerts.yml` and the Grafana dashboard; `docs/operating.md` lists them.
 * Counters start at 0, so a rate is 0 rather than absent.
 *
 * @throws InvalidOptionError naming the option
 * @example
 * import { prometheusMetrics } from 'idem/prometheus'
 * const { registry } = prometheusMetrics({ stores: ['postgres'], consumers: ['billing'] })
 * app.get('/metrics', async (c) => c.text(await registry.metrics(), 200, { 'content-type': registry.contentType }))
 */
export function prometheusMetrics(options: PrometheusMetricsOptions = {}): PrometheusMetrics {
  const events = checkExporterOptions('prometheusMetrics', options, OPTIONS)
  const { registry = globalRegistry, prefix = 'idem_' } = options
  if (registry === null || typeof registry !== 'object' || typeof registry.registerMetric !== 'function') {
    throw new InvalidOptionError(`prometheusMetrics: option "registry" must be a prom-client Registry, got ${shown(registry)}`)
  }
  if (typeof prefix !== 'string' || !/^[a-zA-Z_:][a-zA-Z0-9_:]*$|^$/.test(prefix)) {
    throw new InvalidOptionError(`prometheusMetrics: option "prefix" must be a Prometheus name prefix ([a-zA-Z_:][a-zA-Z0-9_:]*), got ${shown(prefix)}`)
  }

  const taken = Object.values(METRICS).find((spec) => registry.getSingleMetric(`${prefix}${spec.name}`) !== undefined)
  if (taken !== undefined) {
    throw new InvalidOptionError(
      `prometheusMetrics: the registry already has ${prefix}${taken.name}: call prometheusMetrics once per registry (stop() the first), or pass another "registry" or "prefix"`,
    )
  }
  const metrics = new Map<MetricId, Metric>()
  for (const [id, spec] of Object.entries(METRICS) as [MetricId, (typeof METRICS)[MetricId]][]) {
    const common = { name: `${prefix}${spec.name}`, help: spec.help, labelNames: Object.keys(spec.labels), registers: [registry] }
    const metric =
      spec.kind === 'counter'
        ? new Counter(common)
        : spec.kind === 'gauge'
          ? new Gauge(common)
          : new Histogram({ ...common, buckets: [...(spec as { buckets: readonly number[] }).buckets] })
    metrics.set(id, metric)
  }

  const record = eventRecorder(
    {
      add: (id, labels: Labels, value) => (metrics.get(id) as Counter<string>).inc(labels, value),
      set: (id, labels, value) => (metrics.get(id) as Gauge<string>).set(labels, value),
      observe: (id, labels, value) => (metrics.get(id) as Histogram<string>).observe(labels, value),
    },
    options,
  )
  const unsubscribe = events.subscribe(record)
  return {
    registry,
    stop() {
      unsubscribe()
      for (const spec of Object.values(METRICS)) registry.removeSingleMetric(`${prefix}${spec.name}`)
    },
  }
}
