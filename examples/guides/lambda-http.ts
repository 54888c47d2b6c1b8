// An HTTP API behind API Gateway (an HTTP API with a JWT authorizer) on Postgres: the
// Idempotency-Key middleware as makeHttpHandler, with the same answers as on Express or
// Hono. The order and its key commit in one transaction; a retry is answered from the
// stored response.
// DATABASE_URL=postgres://postgres@127.0.0.1:5432/test node --experimental-strip-types examples/guides/lambda-http.ts
import { randomBytes, randomUUID } from 'node:crypto'
import type { APIGatewayProxyEventV2WithJWTAuthorizer, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda'
import pg from 'pg'
import { makeHttpHandler, type LambdaHttpResult } from 'idem/lambda'
import { postgresStore } from 'idem/postgres'

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 1, connectionTimeoutMillis: 5_000 })
pool.on('error', (error) => console.warn(error))
const schema = `guide_lambda_http_${randomBytes(4).toString('hex')}` // a schema of its own, dropped at the end
await pool.query(`CREATE SCHEMA ${schema}`)
const store = postgresStore({ pool, schema })
await store.migrate()
await pool.query(`CREATE TABLE ${schema}.orders (id serial PRIMARY KEY, amount int NOT NULL)`)

export const handler = makeHttpHandler(
  async (event: APIGatewayProxyEventV2WithJWTAuthorizer, context, idem): Promise<APIGatewayProxyStructuredResultV2> => {
    // idem is undefined only for a request it does not protect (here: anything but a POST).
    if (idem === undefined) return { statusCode: 405, headers: { allow: 'POST' }, body: '' }
    const { amount }: { amount: number } = JSON.parse(event.body ?? '{}')
    const { rows } = await idem.tx.query<{ id: number }>(`INSERT INTO ${schema}.orders (amount) VALUES ($1) RETURNING id`, [amount])
    return { statusCode: 201, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ orderId: rows[0].id, amount }) }
  },
  {
    store,
    // The principal, from the JWT the authorizer verified. A claim may be a string, a
    // number, a boolean or a list: use it only as the string it should be.
    scope: (event) => {
      const subject = event.requestContext.authorizer.jwt.claims.sub
      return typeof subject === 'string' ? subject : 'anonymous'
    },
  },
)

/** An HTTP API request (payload format 2.0) with its JWT authorizer's claims, as Lambda hands it over. */
function request(key: string | undefined, body: object): APIGatewayProxyEventV2WithJWTAuthorizer {
  return {
    version: '2.0',
    routeKey: 'POST /orders',
    rawPath: '/orders',
    rawQueryString: '',
    headers: { 'content-type': 'application/json', ...(key === undefined ? {} : { 'idempotency-key': key }) },
    requestContext: {
      accountId: '123456789012',
      apiId: 'api1',
      domainName: 'api1.execute-api.us-east-1.amazonaws.com',
      domainPrefix: 'api1',
      http: { method: 'POST', path: '/orders', protocol: 'HTTP/1.1', sourceIp: '192.0.2.1', userAgent: 'curl/8.5.0' },
      requestId: randomUUID(),
      routeKey: 'POST /orders',
      stage: '$default',
      time: '07/Dec/2026:18:00:00 +0000',
      timeEpoch: 1796580000000,
      authorizer: { principalId: '', integrationLatency: 0, jwt: { claims: { sub: 'acct_1' }, scopes: [] } },
    },
    body: JSON.stringify(body),
    isBase64Encoded: false,
  }
}

/** The context Lambda hands an invocation with 3 s left. */
function invocation(): Context {
  const deadline = Date.now() + 3_000
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName: 'orders',
    functionVersion: '$LATEST',
    invokedFunctionArn: 'arn:aws:lambda:us-east-1:123456789012:function:orders',
    memoryLimitInMB: '512',
    awsRequestId: randomUUID(),
    logGroupName: '/aws/lambda/orders',
    logStreamName: '2026/12/07/[$LATEST]0',
    getRemainingTimeInMillis: () => deadline - Date.now(),
    done: () => {},
    fail: () => {},
    succeed: () => {},
  }
}
const show = (result: LambdaHttpResult) => `${result.statusCode}${result.headers?.['idempotent-replayed'] ? ' (replayed)' : ''} ${result.body}`

try {
  console.log(show(await handler(request('"order-7"', { amount: 1500 }), invocation())))
  console.log(show(await handler(request('"order-7"', { amount: 1500 }), invocation())))
  console.log(show(await handler(request('"order-7"', { amount: 9900 }), invocation())).replace(/"detail":.*/, '…'))
  console.log(show(await handler(request(undefined, { amount: 1500 }), invocation())).replace(/"detail":.*/, '…'))
  const { rows } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${schema}.orders`)
  console.log('orders in the table:', rows[0].n)
} finally {
  await pool.query(`DROP SCHEMA ${schema} CASCADE`)
  await pool.end()
}
