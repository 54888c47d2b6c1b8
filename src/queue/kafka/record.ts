import { idFromBytes } from '../byte-id.js'
import type { Delivery } from '../source.js'
import type { KafkaHeaders, KafkaRecord } from './client.js'
import { KAFKA_ERROR_HEADER, KAFKA_SOURCE_HEADER } from './options.js'
import type { KafkaSettings } from './settings.js'

/** One subscription of a source: its settings, whom it hands deliveries to, and its batches in progress (so close() can stop their retry waits at once). */
export interface SourceRun {
  readonly settings: KafkaSettings
  readonly onDelivery: (delivery: Delivery) => Promise<void>
  readonly batches: Set<AbortController>
  closing: boolean
}

/** How a delivery of a record ended: done (acked or dead-lettered), left unsettled for a later fetch, or to be handed over again. */
export type Settled = 'done' | 'left' | { retryInMs: number }

/** A delivery's settling: its outcome, settled once (a second ack, nack or dead letter throws). */
class Settling {
  started = false
  settle!: (settled: Settled) => void
  readonly outcome = new Promise<Settled>((resolve) => (this.settle = resolve))
  constructor(private readonly name: string) {}

  begin(what: string): void {
    if (this.started) throw new Error(`kafkaSource: delivery ${this.name} was settled already; ${what} must not follow`)
    this.started = true
  }
}

/**
 * One delivery of a record. It resolves when the delivery is settled, which may be after
 * `onDelivery` returns; one still unsettled when the batch halts is left.
 */
export async function deliverOnce(run: SourceRun, topic: string, partition: number, record: KafkaRecord, count: number, halted: AbortSignal): Promise<Settled> {
  const settling = new Settling(`${topic}-${partition}-${record.offset}`)
  try {
    await run.onDelivery(recordDelivery(run.settings, topic, partition, record, count, settling))
  } catch {
    // A settle step failed; what it settled (or not) is in the outcome.
  }
  if (settling.started) return settling.outcome
  // Unsettled when onDelivery returned: the record is held, as an unacknowledged message is
  // elsewhere, until it is settled or the batch halts.
  if (halted.aborted) return 'left'
  const stop = () => settling.settle('left')
  halted.addEventListener('abort', stop, { once: true })
  try {
    return await settling.outcome
  } finally {
    halted.removeEventListener('abort', stop)
  }
}

/** The record as a delivery whose ack, nack and dead letter settle `settling`. */
function recordDelivery(settings: KafkaSettings, topic: string, partition: number, record: KafkaRecord, count: number, settling: Settling): Delivery {
  const { idHeader, deadLetterTopicOf, dialect, producer } = settings
  const { headers, id } = recordHeaders(topic, partition, record, idHeader)
  const offsetId = `${topic}-${partition}-${record.offset}`
  const fallbackId = `${offsetId}@${record.timestamp}`
  return {
    id: id ?? fallbackId,
    data: record.value ?? new Uint8Array(0),
    headers,
    deliveryCount: count,
    redelivered: count > 1,
    async ack() {
      settling.begin('ack')
      settling.settle('done')
    },
    async nack(delayMs) {
      settling.begin('nack')
      settling.settle({ retryInMs: Math.max(0, delayMs) })
    },
    async deadLetter(reason) {
      settling.begin('deadLetter')
      if (deadLetterTopicOf !== null) {
        const copy: KafkaHeaders = { ...record.headers }
        copy[KAFKA_ERROR_HEADER] = reason.slice(0, 1_000) || 'unknown'
        copy[KAFKA_SOURCE_HEADER] = offsetId
        // A copy republished later keeps the inbox's id, so the inbox knows it.
        if (id === undefined) copy[idHeader] = fallbackId
        try {
          await dialect.send(producer!, deadLetterTopicOf(topic), [{ key: record.key, value: record.value, headers: copy }])
        } catch (error) {
          // Fetched again later, the record is a duplicate for the inbox (its dead letter is in idem's table).
          settling.settle('left')
          throw error
        }
      }
      settling.settle('done')
    },
  }
}

/** The record's headers as text (the last of a repeated one), with its topic, partition, offset, timestamp and key; and the id its `idHeader` carries. */
function recordHeaders(topic: string, partition: number, record: KafkaRecord, idHeader: string): { headers: Record<string, string>; id: string | undefined } {
  const headers: Record<string, string> = {}
  let id: string | undefined
  const raw = record.headers
  if (raw !== undefined) {
    for (const name in raw) {
      const value = headerValue(raw[name])
      if (value === undefined) continue
      headers[name] = typeof value === 'string' ? value : value.toString('utf8')
      if (name === idHeader && value.length > 0) id = typeof value === 'string' ? value : idFromBytes(value)
    }
  }
  headers['kafka-topic'] = topic
  headers['kafka-partition'] = String(partition)
  headers['kafka-offset'] = record.offset
  headers['kafka-timestamp'] = record.timestamp
  if (record.key !== null) headers['kafka-key'] = record.key.toString('utf8')
  return { headers, id }
}

function headerValue(value: KafkaHeaders[string]): Buffer | string | undefined {
  if (value === undefined || value === null) return undefined
  // A repeated header: the last one counts, as Kafka's own clients read it.
  return Array.isArray(value) ? value[value.length - 1] : value
}

