// The Kafka tests (test/queue/kafka-suite.ts) on Confluent's @confluentinc/kafka-javascript,
// which tools/kafka-confluent/install.sh builds once per machine (it compiles librdkafka)
// outside the repository. Outside CI a machine without it skips this file with a SKIPPED
// line; with CI set (.ci/run runs the script first) its absence fails the file.
import { CONFLUENT_DIR, loadConfluent } from './kafka-clients.js'
import { kafkaSuite } from './kafka-suite.js'
import { reach } from './support.js'

const confluent = await reach("Confluent's Kafka client", `${CONFLUENT_DIR} (tools/kafka-confluent/install.sh)`, loadConfluent)
await kafkaSuite(confluent, 'idem_q_kafka_confluent')
