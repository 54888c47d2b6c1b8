import { describe } from 'vitest'
import { redisBackend } from './support/backends.js'
import { describeConformance } from './support/conformance.js'
import { fetchFrontEnd, honoFrontEnd } from './support/frontends.js'
import { lambdaV2FrontEnd } from './support/lambda-frontends.js'

const backend = await redisBackend('http-conf')

// The leased engine behind the Web-standard front ends: the rows Bun and Deno run too
// (test/runtimes); and behind Lambda's HTTP API format, where the leased engine is what
// most functions run (on DynamoDB or Redis). The adapters only convert, and Postgres and
// SQLite run every one.
describe.skipIf(backend === undefined)('Idempotency-Key conformance on Redis (the leased engine; the route writes its effect by derived key)', () => {
  describeConformance('redis', () => backend, [fetchFrontEnd, honoFrontEnd, lambdaV2FrontEnd])
})
