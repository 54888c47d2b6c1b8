import { describe } from 'vitest'
import { sqliteBackend } from './support/backends.js'
import { describeConformance } from './support/conformance.js'

const backend = sqliteBackend('idem-http-conf')

describe('Idempotency-Key conformance on SQLite (a real file in WAL mode)', () => {
  describeConformance('sqlite', () => backend)
})
