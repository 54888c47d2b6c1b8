// The Kafka tests (test/queue/kafka-suite.ts) on kafkajs.
import { kafkajsUnderTest } from './kafka-clients.js'
import { kafkaSuite } from './kafka-suite.js'

await kafkaSuite(kafkajsUnderTest, 'idem_q_kafka')
