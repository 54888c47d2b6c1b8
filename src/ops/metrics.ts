import { Counter, Histogram, type Registry } from 'prom-client'
import type { OutcomeEvent } from '../core/engine.js'
import { assertKnownOptions, optionNames } from '../core/validate.js'

/** What `prometheusOutcomes` takes: the registry and the metric name prefix. */
export interface PrometheusOutcomesOptions {
  /** The registry to register on. @default prom-client's global registry */
  registry?: Registry
  /** Metric name prefix. @default 'idem_' */
  prefix?: string
}

const OPTIONS = optionNames<PrometheusOutcomesOptions>({ registry: true, prefix: true })

/**
 * Prometheus metrics for idem's outcomes, fed by the engine's `onOutcome` hook:
 * `idem_outcomes_total{kind, store}` (kind: fresh, replayed, not-stored, in-flight,
 * mismatch, lease-lost, overran, error) and `idem_call_duration_seconds{kind, store}`.
 *
 * Only engine calls, through `onOutcome`. `prometheusMetrics` (`idem/prometheus`) covers
 * every front end from the event stream, with the names the shipped alerts use; do not
 * register both on one registry (both define `idem_call_duration_seconds`).
 * @deprecated use `prometheusMetrics` from `idem/prometheus`
 *
 * @example
 * const metrics = prometheusOutcomes({ registry })
 * const idem = createIdem({ store, onOutcome: metrics.onOutcome })
 */
export function prometheusOutcomes(options: PrometheusOutcomesOptions = {}) {
  assertKnownOptions('prometheusOutcomes', options, OPTIONS)
  const { registry, prefix = 'idem_' } = options
  const registers = registry === undefined ? undefined : [registry]
  const outcomes = new Counter({
    name: `${prefix}outcomes_total`,
    help: 'Idempotent calls by outcome: fresh (ran), replayed, not-stored, in-flight (409), mismatch (422), error',
    labelNames: ['kind', 'store'] as const,
    ...(registers && { registers }),
  })
  const duration = new Histogram({
    name: `${prefix}call_duration_seconds`,
    help: 'Time from the call to its outcome, by outcome',
    labelNames: ['kind', 'store'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    ...(registers && { registers }),
  })
  return {
    /** Counts one call's outcome and its duration: pass it as the engine's `onOutcome`. */
    onOutcome(event: OutcomeEvent): void {
      outcomes.inc({ kind: event.kind, store: event.store })
      duration.observe({ kind: event.kind, store: event.store }, event.durationMs / 1000)
    },
  }
}
