export { prometheusMetrics, type PrometheusMetrics, type PrometheusMetricsOptions } from './prometheus.js'
export { METRICS, HTTP_OUTCOMES, prometheusNames, type MetricSpec, type MetricId, type LabelValues } from './catalog.js'
