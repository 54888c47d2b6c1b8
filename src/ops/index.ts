export { prometheusMetrics, type PrometheusMetrics, type PrometheusMetricsOptions } from './prometheus.js'
export { METRICS, prometheusNames, type MetricSpec, type MetricId, type LabelValues } from './catalog.js'
export { HTTP_OUTCOMES } from '../http/events.js'
