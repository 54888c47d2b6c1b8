import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader, type DataPoint, type Histogram } from '@opentelemetry/sdk-metrics'

/** One sample of the Prometheus text format: `name{labels} value`. */
export function promValue(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (!match || match[1] !== name) continue
    const found: Record<string, string> = {}
    for (const pair of (match[2] ?? '').matchAll(/([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"/g)) found[pair[1]!] = pair[2]!
    if (Object.entries(labels).every(([k, v]) => found[k] === v) && Object.keys(found).length === Object.keys(labels).length) return Number(match[3])
  }
  return undefined
}

/** A meter provider whose metrics are read from the SDK's in-memory exporter on demand. */
export function otelInMemory() {
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE)
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 })
  const provider = new MeterProvider({ readers: [reader] })
  return {
    provider,
    meter: provider.getMeter('idem-test'),
    /** Exports now and returns `instrument → data points` of the latest export. */
    async read(): Promise<Map<string, DataPoint<number | Histogram>[]>> {
      exporter.reset()
      await reader.forceFlush()
      const byName = new Map<string, DataPoint<number | Histogram>[]>()
      for (const resource of exporter.getMetrics()) {
        for (const scope of resource.scopeMetrics) {
          for (const metric of scope.metrics) byName.set(metric.descriptor.name, metric.dataPoints as DataPoint<number | Histogram>[])
        }
      }
      return byName
    },
    shutdown: () => provider.shutdown(),
  }
}

/** The value of the data point whose attributes are exactly `attributes` (a histogram's count). */
export function otelValue(points: DataPoint<number | Histogram>[] | undefined, attributes: Record<string, string> = {}): number | undefined {
  const point = points?.find(
    (p) => Object.keys(p.attributes).length === Object.keys(attributes).length && Object.entries(attributes).every(([k, v]) => p.attributes[k] === v),
  )
  if (point === undefined) return undefined
  return typeof point.value === 'number' ? point.value : point.value.count
}
