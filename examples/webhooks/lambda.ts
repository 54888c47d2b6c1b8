// A Slack Events API endpoint as a Lambda function behind a Function URL (API Gateway's
// REST and HTTP APIs and ALB targets work the same): the signature is checked on the body
// as Lambda hands it over (decoded first when it came in base64). Then four requests
// signed as Slack's docs describe (node:crypto; Slack publishes no signing library for
// Node): the url_verification Slack sends when the Request URL is saved, an event,
// Slack's retry of it, and one whose body was changed on the way.
// node --experimental-strip-types examples/webhooks/lambda.ts
import { createHmac } from 'node:crypto'
import type { APIGatewayProxyEventV2 } from 'aws-lambda'
import { webhookReceiver } from 'idem/lambda'
import { memoryStore } from 'idem/memory' // for trying it out; Postgres, DynamoDB… in production
import { createInbox } from 'idem/queue'
import { slackSignature } from 'idem/webhooks'

const secret = process.env.SLACK_SIGNING_SECRET ?? '8f742231b10e8888abcd99yyyzzz85a5'
const handled: string[] = []

/** The part of Slack's Events API JSON this function reads (declared, not checked: the signature vouches for the sender). */
interface SlackEvent {
  event_id: string
  event: { type: string }
}

export const handler = webhookReceiver<unknown, SlackEvent, APIGatewayProxyEventV2>({
  inbox: createInbox({ store: memoryStore(), consumer: 'slack-events' }), // records each event id once
  verify: slackSignature({ secret }), // on the raw bytes; gives the event id, answers url_verification
  handler: async (tx, event) => void handled.push(`${event.id} ${event.body?.event.type} via ${event.request.requestContext.domainName}`), // your writes, through tx
})

// Trying it: Function URL events (payload format 2.0), signed as Slack signs them.
const url = (body: string, headers: Record<string, string>): APIGatewayProxyEventV2 => ({
  version: '2.0',
  routeKey: '$default',
  rawPath: '/slack/events',
  rawQueryString: '',
  headers: { 'content-type': 'application/json', ...headers },
  requestContext: {
    accountId: 'anonymous',
    apiId: 'a1b2c3d4',
    domainName: 'a1b2c3d4.lambda-url.us-east-1.on.aws',
    domainPrefix: 'a1b2c3d4',
    http: { method: 'POST', path: '/slack/events', protocol: 'HTTP/1.1', sourceIp: '192.0.2.1', userAgent: 'Slackbot 1.0' },
    requestId: 'c6af9ac6-7b61-11e6-9a41-93e8deadbeef',
    routeKey: '$default',
    stage: '$default',
    time: '07/Dec/2026:18:00:00 +0000',
    timeEpoch: 1796580000000,
  },
  body,
  isBase64Encoded: false, // true for a body Lambda passes in base64: it is decoded before the check
})
const challenge = JSON.stringify({ token: 'Jhj5dZrVaK7ZwHHjRyZWjbDl', challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P', type: 'url_verification' })
const payload = JSON.stringify({ type: 'event_callback', event_id: 'Ev0PV52K25', event: { type: 'app_mention', text: 'hi' } })
const now = Math.floor(Date.now() / 1000)
const deliveries: Array<[what: string, timestamp: number, signed: string, body: string, retry?: Record<string, string>]> = [
  ['url_verification', now, challenge, challenge],
  ['signed', now - 4, payload, payload],
  ['retried', now, payload, payload, { 'x-slack-retry-num': '1', 'x-slack-retry-reason': 'http_timeout' }],
  ['tampered', now, payload, payload.replace('hi', 'bye')],
]
for (const [what, timestamp, signed, body, retry] of deliveries) {
  const signature = `v0=${createHmac('sha256', secret).update(`v0:${timestamp}:${signed}`).digest('hex')}`
  const headers = { 'x-slack-signature': signature, 'x-slack-request-timestamp': String(timestamp), ...retry }
  const result = await handler(url(body, headers))
  console.log(what, result.statusCode, JSON.parse(result.body ?? '{}').check ?? result.body)
}
console.log('handled:', handled.join(', '))
