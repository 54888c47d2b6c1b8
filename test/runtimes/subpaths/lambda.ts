// idem/lambda's HTTP handler on the leased engine over idem/dynamodb (DynamoDB Local),
// invoked as Lambda invokes it: an HTTP API (payload 2.0) event as API Gateway documents
// it, with a JWT authorizer's claims, and a context whose remaining time counts down.
// The order is placed once (its charge a step, counted in the table); the retry, a new
// request id and trace, is replayed; the key with another amount is refused (422).
import { UpdateItemCommand } from '@aws-sdk/client-dynamodb'
import type { APIGatewayProxyEventV2WithJWTAuthorizer, APIGatewayProxyStructuredResultV2 } from 'aws-lambda'
import { randomUUID } from 'node:crypto'
import { createLeasedIdem, type StepContext } from 'idem'
import { dynamodbStore } from 'idem/dynamodb'
import { makeHttpHandler } from 'idem/lambda'
import { lambdaContext } from '../../lambda/context.js'
import { addOne, localDynamo } from './dynamo-client.js'
import { effectCounter, LAMBDA_ORDER, type LambdaAnswer, type LambdaResult } from './results.js'
import { reportResult, required, scriptConfig } from './script.js'

/** A POST /orders to an HTTP API, as the function receives it (payload format 2.0, JWT authorizer). */
function orderRequest(key: string, body: string): APIGatewayProxyEventV2WithJWTAuthorizer {
  const requestId = randomUUID()
  return {
    version: '2.0',
    routeKey: 'POST /orders',
    rawPath: '/orders',
    rawQueryString: '',
    headers: {
      accept: 'application/json',
      authorization: 'Bearer eyJraWQiOiJrMSIsImFsZyI6IlJTMjU2In0.e30.c2ln',
      'content-length': String(new TextEncoder().encode(body).length),
      'content-type': 'application/json',
      host: 'r3pmxmplak.execute-api.us-east-1.amazonaws.com',
      'idempotency-key': key,
      'user-agent': 'curl/8.5.0',
      'x-amzn-trace-id': `Root=1-${Date.now().toString(16).slice(-8)}-${requestId.replaceAll('-', '').slice(0, 24)}`,
      'x-forwarded-for': '192.0.2.1',
      'x-forwarded-port': '443',
      'x-forwarded-proto': 'https',
    },
    requestContext: {
      accountId: '123456789012',
      apiId: 'r3pmxmplak',
      authorizer: { principalId: '', integrationLatency: 0, jwt: { claims: { sub: 'acct_1', iss: 'https://issuer.example.com' }, scopes: ['orders:write'] } },
      domainName: 'r3pmxmplak.execute-api.us-east-1.amazonaws.com',
      domainPrefix: 'r3pmxmplak',
      http: { method: 'POST', path: '/orders', protocol: 'HTTP/1.1', sourceIp: '192.0.2.1', userAgent: 'curl/8.5.0' },
      requestId,
      routeKey: 'POST /orders',
      stage: '$default',
      time: '02/Dec/2026:01:00:00 +0000',
      timeEpoch: Date.now(),
    },
    body,
    isBase64Encoded: false,
  }
}

await reportResult(async (): Promise<LambdaResult> => {
  const config = scriptConfig()
  const table = required(config, 'table')
  const client = localDynamo(config)
  let runs = 0
  const handler = makeHttpHandler<StepContext, APIGatewayProxyStructuredResultV2, APIGatewayProxyEventV2WithJWTAuthorizer>(
    async (event, _context, idem) => {
      runs++
      const { amount } = JSON.parse(event.body ?? '{}') as { amount: number }
      // The charge, a step: counted in the table, with the derived key a provider would take.
      const chargeId = await idem!.tx.step('charge', async () => {
        await client.send(new UpdateItemCommand(addOne(table, effectCounter(LAMBDA_ORDER))))
        return idem!.tx.derive('charge')
      })
      return { statusCode: 201, headers: { 'content-type': 'application/json', location: '/orders/o-1' }, body: JSON.stringify({ orderId: 'o-1', amount, chargeId }) }
    },
    {
      idem: createLeasedIdem({ store: dynamodbStore({ client, table, timeoutMs: 5_000 }) }),
      scope: (event) => String(event.requestContext.authorizer.jwt.claims.sub),
    },
  )
  const answer = (result: unknown): LambdaAnswer => {
    const { statusCode = 0, headers = {}, body = '' } = result as APIGatewayProxyStructuredResultV2
    return { statusCode, headers: Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), String(value)])), body }
  }
  const fresh = answer(await handler(orderRequest('"order-1"', '{"amount":1500}'), lambdaContext(10_000, 'orders')))
  const replay = answer(await handler(orderRequest('"order-1"', '{"amount":1500}'), lambdaContext(10_000, 'orders')))
  const mismatch = answer(await handler(orderRequest('"order-1"', '{"amount":9900}'), lambdaContext(10_000, 'orders')))
  client.destroy()
  return { fresh, replay, mismatch, runs }
})
