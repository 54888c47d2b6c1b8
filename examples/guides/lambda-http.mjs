// An HTTP API behind a Function URL (or API Gateway) on Postgres: the Idempotency-Key
// middleware as makeHttpHandler, with the same answers as on Express or Hono. The order
// and its key commit in one transaction; a retry is answered from the stored response.
// DATABASE_URL=postgres://postgres@127.0.0.1:5432/test node examples/guides/lambda-http.mjs
import { randomBytes, randomUUID } from 'node:crypto'
import pg from 'pg'
import { makeHttpHandler } from 'idem/lambda'
import { postgresStore } from 'idem/postgres'

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 1, connectionTimeoutMillis: 5_000 })
pool.on('error', (error) => console.warn(error))
const schema = `guide_lambda_http_${randomBytes(4).toString('hex')}` // a schema of its own, dropped at the end
await pool.query(`CREATE SCHEMA ${schema}`)
const store = postgresStore({ pool, schema })
await store.migrate()
await pool.query(`CREATE TABLE ${schema}.orders (id serial PRIMARY KEY, amount int NOT NULL)`)

export const handler = makeHttpHandler(
  async (event, context, idem) => {
    const { amount } = JSON.parse(event.body)
    const { rows } = await idem.tx.query(`INSERT INTO ${schema}.orders (amount) VALUES ($1) RETURNING id`, [amount])
    return { statusCode: 201, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ orderId: rows[0].id, amount }) }
  },
  {
    store,
    // The principal, from what the authorizer put on the request (an IAM caller, a JWT's subject).
    scope: (event) => event.requestContext.authorizer?.jwt?.claims?.sub ?? 'anonymous',
  },
)

/** A Function URL request (payload format 2.0) as Lambda hands it over. */
function request(key, body) {
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: '/orders',
    rawQueryString: '',
    headers: { 'content-type': 'application/json', ...(key === undefined ? {} : { 'idempotency-key': key }) },
    requestContext: { http: { method: 'POST', path: '/orders', protocol: 'HTTP/1.1', sourceIp: '192.0.2.1', userAgent: 'curl/8.5.0' }, authorizer: { jwt: { claims: { sub: 'acct_1' } } } },
    body: JSON.stringify(body),
    isBase64Encoded: false,
  }
}
const invocation = () => {
  const deadline = Date.now() + 3_000
  return { functionName: 'orders', awsRequestId: randomUUID(), getRemainingTimeInMillis: () => deadline - Date.now() }
}
const show = (result) => `${result.statusCode}${result.headers['idempotent-replayed'] ? ' (replayed)' : ''} ${result.body}`

try {
  console.log(show(await handler(request('"order-7"', { amount: 1500 }), invocation())))
  console.log(show(await handler(request('"order-7"', { amount: 1500 }), invocation())))
  console.log(show(await handler(request('"order-7"', { amount: 9900 }), invocation())).replace(/"detail":.*/, '…'))
  console.log(show(await handler(request(undefined, { amount: 1500 }), invocation())).replace(/"detail":.*/, '…'))
  const { rows } = await pool.query(`SELECT count(*)::int AS n FROM ${schema}.orders`)
  console.log('orders in the table:', rows[0].n)
} finally {
  await pool.query(`DROP SCHEMA ${schema} CASCADE`)
  await pool.end()
}
