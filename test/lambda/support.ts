// Lambda-shaped inputs for the idem/lambda tests: a context whose clock is real (the
// invocation's deadline counts down from when it is made), and events in the shapes AWS
// documents for each source, typed by @types/aws-lambda so a field that drifts fails the
// type check.
import { createHash, randomUUID } from 'node:crypto'
import type { APIGatewayProxyEventV2, EventBridgeEvent, SNSEvent, SQSEvent, SQSMessageAttributes, SQSRecord } from 'aws-lambda'
import type { LambdaHttpEvent } from '../../src/lambda/index.js'
import { eventOf, type Format } from '../http/support/lambda-frontends.js'
import { ACCOUNT, REGION } from './context.js'

export { FUNCTION_NAME, lambdaContext } from './context.js'

export interface OrderPlaced {
  orderId: string
  amount: number
}

/** An EventBridge event as a rule's target receives it. */
export function orderPlaced(detail: OrderPlaced, id: string = randomUUID()): EventBridgeEvent<'Order Placed', OrderPlaced> {
  return {
    version: '0',
    id,
    'detail-type': 'Order Placed',
    source: 'com.example.orders',
    account: ACCOUNT,
    time: '2026-12-02T01:00:00Z',
    region: REGION,
    resources: [],
    detail,
  }
}

/** An SNS notification as a subscribed function receives it: one record. */
export function snsNotification(message: unknown, messageId = randomUUID()): SNSEvent {
  const topic = `arn:aws:sns:${REGION}:${ACCOUNT}:orders`
  return {
    Records: [
      {
        EventVersion: '1.0',
        EventSubscriptionArn: `${topic}:${randomUUID()}`,
        EventSource: 'aws:sns',
        Sns: {
          SignatureVersion: '1',
          Timestamp: '2026-12-02T01:00:00.000Z',
          Signature: 'EXAMPLEpH+DcEwjAPg8O9mY8dReBSwksfg2S7WKQcikcNKWLQjwu6A4VbeS0QHVCkhRS7fUQvi2egU3N858fiTDN6bkkOxYDVrY0Ad8L10Hs3zH81mtnPk5uvvolIC1CXGu43obcgFxeL3khZl8IKvO61GWB6jI9b5+gLPoBc1Q=',
          SigningCertUrl: 'https://sns.us-east-1.amazonaws.com/SimpleNotificationService-0000000000000000000000.pem',
          MessageId: messageId,
          Message: JSON.stringify(message),
          MessageAttributes: {},
          Type: 'Notification',
          UnsubscribeUrl: `https://sns.us-east-1.amazonaws.com/?Action=Unsubscribe&SubscriptionArn=${topic}`,
          TopicArn: topic,
          Subject: 'Order Placed',
        },
      },
    ],
  }
}

/** One SQS message as an event source mapping hands it over, on its `receiveCount`-th receipt. */
export function sqsRecord(body: unknown, options: { messageId?: string; receiveCount?: number; attributes?: SQSMessageAttributes; fifo?: boolean } = {}): SQSRecord {
  const text = JSON.stringify(body)
  const queue = options.fifo === true ? 'orders.fifo' : 'orders'
  return {
    messageId: options.messageId ?? randomUUID(),
    receiptHandle: `AQEB${randomUUID().replaceAll('-', '')}`,
    body: text,
    attributes: {
      ApproximateReceiveCount: String(options.receiveCount ?? 1),
      SentTimestamp: '1764637200000',
      SenderId: 'AIDAIENQZJOLO23YVJ4VO',
      ApproximateFirstReceiveTimestamp: '1764637200100',
      ...(options.fifo === true ? { MessageGroupId: 'orders', SequenceNumber: '18849496460467696128', MessageDeduplicationId: randomUUID() } : {}),
    },
    messageAttributes: options.attributes ?? {},
    md5OfBody: createHash('md5').update(text).digest('hex'),
    eventSource: 'aws:sqs',
    eventSourceARN: `arn:aws:sqs:${REGION}:${ACCOUNT}:${queue}`,
    awsRegion: REGION,
  }
}

/** The same records delivered again: each one's receive count one higher, new receipt handles. */
export function redelivered(event: SQSEvent): SQSEvent {
  return {
    Records: event.Records.map((record) => ({
      ...record,
      receiptHandle: `AQEB${randomUUID().replaceAll('-', '')}`,
      attributes: { ...record.attributes, ApproximateReceiveCount: String(Number(record.attributes.ApproximateReceiveCount) + 1) },
    })),
  }
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** A promise that never settles: a handler stuck on a call without a timeout. */
export const forever = () => new Promise<never>(() => {})

/** A request to an HTTP API (or a Function URL) as the function receives it: payload format 2.0. */
export function httpApiRequest(options: { key?: string; body: string | Uint8Array; contentType?: string; path?: string; account?: string }): APIGatewayProxyEventV2 {
  const binary = typeof options.body !== 'string'
  const headers: Record<string, string> = { 'content-type': options.contentType ?? 'application/json', host: 'abc123.lambda-url.us-east-1.on.aws' }
  if (options.key !== undefined) headers['idempotency-key'] = options.key
  const path = options.path ?? '/orders'
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: path,
    rawQueryString: '',
    headers,
    requestContext: {
      accountId: options.account ?? 'anonymous',
      apiId: 'abc123',
      domainName: 'abc123.lambda-url.us-east-1.on.aws',
      domainPrefix: 'abc123',
      http: { method: 'POST', path, protocol: 'HTTP/1.1', sourceIp: '192.0.2.1', userAgent: 'curl/8.5.0' },
      requestId: randomUUID(),
      routeKey: '$default',
      stage: '$default',
      time: '02/Dec/2026:01:00:00 +0000',
      timeEpoch: 1_764_637_200_000,
    },
    body: typeof options.body === 'string' ? options.body : Buffer.from(options.body).toString('base64'),
    isBase64Encoded: binary,
  }
}

export type { Format as HttpFormat } from '../http/support/lambda-frontends.js'
export const HTTP_FORMATS: readonly Format[] = ['v1', 'v2', 'alb']

/** A POST of a JSON body to `/orders` with `key`, as a function behind `format` receives it. */
export function httpEvent(format: Format, options: { key: string; body: string }): LambdaHttpEvent {
  const headers: Array<[string, string]> = [['content-type', 'application/json'], ['idempotency-key', options.key]]
  return eventOf(format, { method: 'POST', path: '/orders', query: '', headers, body: Buffer.from(options.body) })
}
