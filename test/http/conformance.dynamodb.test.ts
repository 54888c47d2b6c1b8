import { describe } from 'vitest'
import { dynamoBackend } from './support/backends.js'
import { describeConformance } from './support/conformance.js'
import { fetchFrontEnd, honoFrontEnd } from './support/frontends.js'
import { lambdaV2FrontEnd } from './support/lambda-frontends.js'

const backend = await dynamoBackend('http_conf')

// The leased engine on DynamoDB, the store most Lambda functions keep their keys in:
// behind Lambda's HTTP API format and the Web-standard front ends, the same rows as on
// Redis (conformance.redis.test.ts). The adapters only convert, and Postgres and SQLite
// run every one.
describe.skipIf(backend === undefined)('Idempotency-Key conformance on DynamoDB (the leased engine; the route writes its effect by derived key)', () => {
  describeConformance('dynamodb', () => backend, [fetchFrontEnd, honoFrontEnd, lambdaV2FrontEnd])
})
