// The webhook receiver of idem/lambda behind each of Lambda's HTTP front doors, each a
// real server on loopback standing in for AWS: a request becomes the event API Gateway's
// REST API (payload 1.0), its HTTP API (2.0), a Function URL (2.0, its own domain) or an
// ALB target (multi-value headers) hands the function, shaped as AWS documents them (a
// UTF-8 body as text, anything else in base64 with isBase64Encoded; every body in base64
// from the REST API, whose binary media types cover every type), and the function's
// result becomes the HTTP answer as AWS sends it. A function that throws is answered 502,
// as API Gateway answers it.
import type { APIGatewayProxyEvent, APIGatewayProxyEventV2 } from 'aws-lambda'
import { webhookReceiver } from '../../../src/lambda/index.js'
import type { LambdaHttpEvent, LambdaHttpResult } from '../../../src/lambda/index.js'
import { eventOf, responseOf, type RequestParts } from '../../http/support/lambda-frontends.js'
import type { Adapter } from './adapters.js'
import { nodeServe } from './serving.js'

/** Lambda's HTTP front doors. */
type Door = 'API Gateway REST API, payload 1.0' | 'API Gateway HTTP API, payload 2.0' | 'Function URL' | 'ALB'

/**
 * What a REST API with every media type binary hands the function (`binaryMediaTypes`
 * covering every type, as docs/webhooks.md configures webhook endpoints): every body in
 * base64, JSON too.
 */
function binaryRestApiEvent(parts: RequestParts): APIGatewayProxyEvent {
  const event = eventOf('v1', parts) as APIGatewayProxyEvent
  return parts.body.length === 0 ? event : { ...event, body: parts.body.toString('base64'), isBase64Encoded: true }
}

/** The event `door` hands the function for a request. */
function eventAt(door: Door, parts: RequestParts): LambdaHttpEvent {
  if (door === 'API Gateway REST API, payload 1.0') return binaryRestApiEvent(parts)
  if (door === 'ALB') return eventOf('alb', parts)
  const event = eventOf('v2', parts) as APIGatewayProxyEventV2
  if (door === 'API Gateway HTTP API, payload 2.0') return event
  // A Function URL: payload 2.0 from the function's own domain, no API or stage in front.
  const urlId = 'a1b2c3d4e5f6g7h8i9j0klmnopqrstuv'
  return { ...event, requestContext: { ...event.requestContext, apiId: urlId, domainName: `${urlId}.lambda-url.us-east-1.on.aws`, domainPrefix: urlId } }
}

async function partsOf(request: Request): Promise<RequestParts> {
  const url = new URL(request.url)
  return { method: request.method, path: url.pathname, query: url.search.slice(1), headers: [...request.headers], body: Buffer.from(await request.arrayBuffer()) }
}

function lambdaAdapter(door: Door): Adapter {
  return {
    name: `Lambda (${door})`,
    mounts: [],
    start(receivers) {
      const functions = new Map(receivers.map(({ path, options }) => [path, webhookReceiver(options<LambdaHttpEvent>())]))
      return nodeServe(async (request) => {
        const parts = await partsOf(request)
        let result: LambdaHttpResult
        try {
          result = await functions.get(parts.path)!(eventAt(door, parts))
        } catch {
          return new Response('{"message":"Internal server error"}', { status: 502, headers: { 'content-type': 'application/json' } })
        }
        return responseOf(result)
      })
    },
  }
}

export const lambdaAdapters: readonly Adapter[] = (['API Gateway REST API, payload 1.0', 'API Gateway HTTP API, payload 2.0', 'Function URL', 'ALB'] as const).map(lambdaAdapter)
