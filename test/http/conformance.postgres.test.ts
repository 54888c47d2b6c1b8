import { describe } from 'vitest'
import { postgresBackend } from './support/backends.js'
import { describeConformance } from './support/conformance.js'

const backend = await postgresBackend('idem_http_conf')

describe.skipIf(backend === undefined)('Idempotency-Key conformance on Postgres', () => {
  describeConformance('postgres', () => backend)
})
