import { describe } from 'vitest'
import { dynamoBackend } from './support/backends.js'
import { describeConformance } from './support/conformance.js'
import { fetchFrontEnd, honoFrontEnd } from './support/frontends.js'
import { lambdaAlbFrontEnd, lambdaUrlFrontEnd, lambdaV1FrontEnd, lambdaV2FrontEnd } from './support/lambda-frontends.js'

const backend = await dynamoBackend('http_conf')

// The leased engine on DynamoDB, the store most Lambda functions keep their keys in:
// behind every Lambda front end that Postgres runs (REST API 1.0, HTTP API 2.0, Function
// URL, ALB) and the Web-standard front ends, the same rows as on Redis
// (conformance.redis.test.ts). What 1.0 cannot carry it skips, saying why, as on Postgres.
describe.skipIf(backend === undefined)('Idempotency-Key conformance on DynamoDB (the leased engine; the route writes its effect by derived key)', () => {
  describeConformance('dynamodb', () => backend, [fetchFrontEnd, honoFrontEnd, lambdaV1FrontEnd, lambdaV2FrontEnd, lambdaUrlFrontEnd, lambdaAlbFrontEnd])
})
