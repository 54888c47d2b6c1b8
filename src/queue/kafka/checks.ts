import { InvalidOptionError } from '../../core/errors/invalid-option.js'
import { shown } from '../../core/errors/option-checks.js'
import type { KafkaClient } from './client.js'

// Kafka's own rule for topic names.
const TOPIC_NAME = /^[A-Za-z0-9._-]{1,249}$/

export function assertClient(caller: string, kafka: unknown): asserts kafka is KafkaClient {
  const client = kafka as Partial<KafkaClient> | null
  if (client === null || typeof client !== 'object' || typeof client.consumer !== 'function' || typeof client.producer !== 'function') {
    throw new InvalidOptionError(`${caller}: option "kafka" must be a Kafka client (kafkajs's or Confluent's KafkaJS.Kafka), got ${shown(kafka)}`)
  }
}

export function assertTopic(option: string, topic: unknown): asserts topic is string {
  if (typeof topic !== 'string' || !TOPIC_NAME.test(topic) || topic === '.' || topic === '..') {
    throw new InvalidOptionError(`${option} must be a Kafka topic name (1–249 of A-Z a-z 0-9 . _ -), got ${shown(topic)}`)
  }
}

export function assertConfig(option: string, config: unknown): asserts config is Record<string, unknown> {
  if (config === null || typeof config !== 'object' || Array.isArray(config)) throw new InvalidOptionError(`${option} must be an object of client settings, got ${shown(config)}`)
}
