import { metrics as otelMetrics, type Attributes, type Counter, type Gauge, type Histogram, type Meter } from '@opentelemetry/api'
import { InvalidOptionError } from '../core/errors/invalid-option.js'
import { optionNames, shown } from '../core/errors/option-checks.js'
import { METRICS, type MetricId } from './catalog.js'
import { checkExporterOptions, type ExporterOptions } from './options.js'
import { eventRecorder } from './recorder.js'

/** What `openTelemetryMetrics` takes: the meter, and the stores and consumers to pre-initialise series for. */
export interface OpenTelemetryMetricsOptions extends ExporterOptions {
  /** The meter to create the instruments on. @default `metrics.getMeter('idem')` from the global meter provider */
  meter?: Meter
}

/** The running exporter, and how to stop it. */
export interface OpenTelemetryMetrics {
  /** Unsubscribes from the event stream; the instruments stay with the meter. */
  stop(): void
}

type Instrument = Counter<Attributes> | Pick<Gauge<Attributes>, 'record'> | Histogram<Attributes>

/**
 * A gauge on any API of the peer range: the synchronous gauge where the meter has one
 * (API 1.9 on), else (1.3 to 1.8) an observable gauge that reports the last value set
 * for each attribute set, which exports the same points.
 */
function gaugeOf(meter: Meter, name: string, options: { description: string; unit: string }): Pick<Gauge<Attributes>, 'record'> {
  if (typeof meter.createGauge === 'function') return meter.createGauge(name, options)
  const last = new Map<string, { value: number; attributes: Attributes | undefined }>()
  meter.createObservableGauge(name, options).addCallback((result) => {
    for (const { value, attributes } of last.values()) result.observe(value, attributes)
  })
  return { record: (value, attributes) => last.set(JSON.stringify(attributes ?? {}), { value, attributes }) }
}

const OPTIONS = optionNames<OpenTelemetryMetricsOptions>({ events: true, stores: true, consumers: true, meter: true })

/**
 * OpenTelemetry metrics for everything idem does, fed by the event stream, through
 * `@opentelemetry/api` (an optional peer dependency): your SDK's readers and exporters
 * decide where they go (OTLP, Prometheus, the console). Instruments are named
 * `idem.http.requests`, `idem.store.round_trip`, … (see `docs/operating.md`); counters
 * start at 0 for every listed label value.
 *
 * @throws InvalidOptionError naming the option
 * @example
 * import { MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics'
 * import { openTelemetryMetrics } from 'idem/opentelemetry'
 * const provider = new MeterProvider({ readers: [new PeriodicExportingMetricReader({ exporter })] })
 * openTelemetryMetrics({ meter: provider.getMeter('idem'), stores: ['postgres'] })
 */
export function openTelemetryMetrics(options: OpenTelemetryMetricsOptions = {}): OpenTelemetryMetrics {
  const events = checkExporterOptions('openTelemetryMetrics', options, OPTIONS)
  const meter = options.meter ?? otelMetrics.getMeter('idem')
  if (meter === null || typeof meter !== 'object' || typeof meter.createCounter !== 'function') {
    throw new InvalidOptionError(`openTelemetryMetrics: option "meter" must be an OpenTelemetry Meter (provider.getMeter('idem')), got ${shown(meter)}`)
  }
  const instruments = new Map<MetricId, Instrument>()
  for (const [id, spec] of Object.entries(METRICS) as [MetricId, (typeof METRICS)[MetricId]][]) {
    const common = { description: spec.help, unit: spec.unit }
    instruments.set(
      id,
      spec.kind === 'counter'
        ? meter.createCounter(spec.otel, common)
        : spec.kind === 'gauge'
          ? gaugeOf(meter, spec.otel, common)
          : meter.createHistogram(spec.otel, { ...common, advice: { explicitBucketBoundaries: [...(spec as { buckets: readonly number[] }).buckets] } }),
    )
  }
  const record = eventRecorder(
    {
      add: (id, labels, value) => (instruments.get(id) as Counter<Attributes>).add(value, labels),
      set: (id, labels, value) => (instruments.get(id) as Pick<Gauge<Attributes>, 'record'>).record(value, labels),
      observe: (id, labels, value) => (instruments.get(id) as Histogram<Attributes>).record(value, labels),
    },
    options,
  )
  const unsubscribe = events.subscribe(record)
  return { stop: unsubscribe }
}
