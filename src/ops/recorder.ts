import type { IdemEvent } from '../core/events.js'
import { METRICS, type LabelValues, type MetricId } from './catalog.js'

export type Labels = Record<string, string>

/** What an exporter does with the metrics the recorder derives from events. */
export interface MetricSink {
  /** Adds to a counter (0 creates the series). */
  add(id: MetricId, labels: Labels, value: number): void
  /** Sets a gauge. */
  set(id: MetricId, labels: Labels, value: number): void
  /** Records one value in a histogram, in the metric's unit. */
  observe(id: MetricId, labels: Labels, value: number): void
}

export interface RecorderOptions {
  /** Store names (`postgres`, `sqlite`, `redis`, `dynamodb`, `memory`) whose series start at 0 now, not at their first event. */
  stores?: readonly string[]
  /** Inbox consumer names whose series start at 0 now. */
  consumers?: readonly string[]
}

type Learned = Exclude<LabelValues, readonly string[]>

/**
 * Turns the event stream into metric updates, and starts every counter's series at 0:
 * those with fixed labels at once, those naming a store or a consumer as soon as the
 * name is given or first heard of (before that event is counted), so that a rate over
 * them is 0 rather than absent.
 */
export function eventRecorder(sink: MetricSink, { stores = [], consumers = [] }: RecorderOptions = {}): (event: IdemEvent) => void {
  const known: Record<Learned, Set<string>> = { store: new Set(), consumer: new Set(), table: new Set(), code: new Set() }

  function learn(kind: Learned, value: string): void {
    if (known[kind].has(value)) return
    known[kind].add(value)
    for (const [id, metric] of Object.entries(METRICS) as [MetricId, (typeof METRICS)[MetricId]][]) {
      if (metric.kind !== 'counter') continue
      const labels = Object.entries(metric.labels as Record<string, LabelValues>)
      if (!labels.some(([, values]) => values === kind)) continue
      // Only counters whose other labels are all listed can be started.
      if (labels.some(([, values]) => typeof values === 'string' && values !== kind)) continue
      for (const combination of combinations(labels, kind, value)) sink.add(id, combination, 0)
    }
  }

  startCounters(sink)
  for (const store of stores) learn('store', store)
  for (const consumer of consumers) learn('consumer', consumer)

  return (event: IdemEvent): void => recordEvent(sink, learn, event)
}

/** One event as the metrics it moves. */
function recordEvent(sink: MetricSink, learn: (kind: Learned, value: string) => void, event: IdemEvent): void {
  switch (event.type) {
    case 'http':
      sink.add('httpRequests', { outcome: event.outcome }, 1)
      return
    case 'call':
      learn('store', event.store)
      sink.add('calls', { engine: event.engine, store: event.store, outcome: event.kind }, 1)
      sink.observe('callDuration', { engine: event.engine, store: event.store }, event.durationMs / 1000)
      return
    case 'store':
      learn('store', event.store)
      sink.observe('storeRoundTrip', { store: event.store, operation: event.operation }, event.durationMs / 1000)
      if (!event.ok) sink.add('storeErrors', { store: event.store, operation: event.operation }, 1)
      return
    case 'inbox':
      learn('consumer', event.consumer)
      sink.add('inboxMessages', { consumer: event.consumer, status: event.status }, 1)
      return
    case 'webhook':
      learn('consumer', event.consumer)
      sink.add('webhookDeliveries', { consumer: event.consumer, signature: event.signature, status: event.status }, 1)
      return
    case 'dispatch':
      if (event.delivered > 0) sink.add('outboxDeliveries', { outcome: 'delivered' }, event.delivered)
      if (event.retried > 0) sink.add('outboxDeliveries', { outcome: 'retried' }, event.retried)
      if (event.deadLettered > 0) sink.add('outboxDeliveries', { outcome: 'dead-lettered' }, event.deadLettered)
      if (event.overdue > 0) sink.add('outboxDeliveries', { outcome: 'overdue' }, event.overdue)
      sink.set('outboxLag', {}, event.lagMs === undefined ? 0 : Math.max(0, event.lagMs) / 1000)
      return
    case 'dead-letter':
      sink.add('deadLetters', { source: event.source }, 1)
      return
    case 'lease':
      learn('store', event.store)
      sink.add(event.change === 'takeover' ? 'leaseTakeovers' : event.change === 'lost' ? 'leaseLost' : 'fencedWrites', { store: event.store }, 1)
      return
    case 'reconcile':
      sink.set('reconcileDuplicateRatio', { table: event.table }, event.duplicateRate)
      sink.set('reconcileRows', { table: event.table }, event.totalRows)
      sink.set('reconcileDuplicateRows', { table: event.table }, event.duplicateRows)
      sink.set('reconcileTimestamp', { table: event.table }, Date.now() / 1000)
      return
    case 'warning':
      sink.add('warnings', { code: event.code }, 1)
      return
  }
}

/** Every counter and gauge whose labels are all listed, at zero, so a dashboard sees them before their first event. */
function startCounters(sink: MetricSink): void {
  for (const [id, metric] of Object.entries(METRICS) as [MetricId, (typeof METRICS)[MetricId]][]) {
    const labels = Object.entries(metric.labels as Record<string, LabelValues>)
    if (labels.some(([, values]) => typeof values === 'string')) continue
    if (metric.kind === 'counter') for (const combination of combinations(labels)) sink.add(id, combination, 0)
    else if (metric.kind === 'gauge' && labels.length === 0) sink.set(id, {}, 0)
  }
}

function combinations(labels: [string, LabelValues][], learned?: Learned, value?: string): Labels[] {
  let result: Labels[] = [{}]
  for (const [name, values] of labels) {
    const options = typeof values === 'string' ? (values === learned ? [value!] : []) : values
    result = result.flatMap((partial) => options.map((option) => ({ ...partial, [name]: option })))
  }
  return result
}
