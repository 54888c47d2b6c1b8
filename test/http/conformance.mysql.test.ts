import { describe } from 'vitest'
import { describeConformance } from './support/conformance.js'
import { mysqlBackend } from './support/mysql-backend.js'

const backend = await mysqlBackend('idem_http_conf')

describe.skipIf(backend === undefined)('Idempotency-Key conformance on MySQL (MariaDB 10.11 here)', () => {
  describeConformance('mysql', () => backend)
})
