export { prometheusOutcomes, type PrometheusOutcomesOptions } from './metrics.js'
