// The Lambda front ends of the conformance table: each call becomes the event API
// Gateway, a Function URL or an ALB would hand a function (REST API payload 1.0, HTTP API
// payload 2.0, Function URL payload 2.0 from its own domain, ALB with multi-value
// headers, shaped as AWS documents them), the
// function made with makeHttpHandler runs the shared routes, and its result becomes the
// HTTP answer as API Gateway or the ALB would send it. A function that throws is
// answered 500, as the fetch front end answers.
import type { ALBEvent, ALBResult, APIGatewayProxyEvent, APIGatewayProxyEventV2, APIGatewayProxyResult, APIGatewayProxyStructuredResultV2 } from 'aws-lambda'
import { isUtf8 } from 'node:buffer'
import { randomUUID } from 'node:crypto'
import { makeHttpHandler } from '../../../src/lambda/index.js'
import type { LambdaHttpEvent } from '../../../src/lambda/index.js'
import type { IdempotencyOptions } from '../../../src/http/options.js'
import { lambdaContext } from '../../lambda/context.js'
import { runRoute, tenantOf, type RouteOutput } from './app.js'
import type { AppOptions, Call, FrontEnd } from './frontends.js'
import { REST_API_ENCODING_CANNOT, restApiBody } from './platform-decoding.js'

/** Lambda's HTTP formats: a REST API (payload 1.0), an HTTP API or Function URL (2.0), an ALB target with multi-value headers. */
export type Format = 'v1' | 'v2' | 'alb'

/** A request's parts: its header fields (repeats kept), query, and body bytes. */
export interface RequestParts {
  method: string
  path: string
  query: string
  headers: Array<[string, string]>
  body: Buffer
}

/** The request a call describes. */
async function partsOf(call: Call): Promise<RequestParts> {
  const headers: Array<[string, string]> = []
  for (const value of [call.key ?? []].flat()) headers.push(['idempotency-key', value])
  if (call.tenant !== undefined) headers.push(['authorization', `Bearer ${call.tenant}`])
  let body = Buffer.alloc(0)
  if (call.body instanceof FormData) {
    // fetch's own encoder, so the boundary is a fresh one on every send.
    const encoded = new Request('http://encode.test/', { method: 'POST', body: call.body })
    headers.push(['content-type', encoded.headers.get('content-type')!])
    body = Buffer.from(await encoded.arrayBuffer())
  } else if (typeof call.body === 'string') body = Buffer.from(call.body, 'utf8')
  else if (call.body !== undefined) body = Buffer.from(call.body)
  if (call.contentType !== undefined) headers.push(['content-type', call.contentType])
  if (call.contentEncoding !== undefined) headers.push(['content-encoding', call.contentEncoding])
  const [path, query = ''] = call.path.split('?', 2) as [string, string?]
  return { method: call.method ?? 'POST', path, query, headers, body }
}

/** The event a function behind `format` receives for a request, shaped as AWS documents it. */
export function eventOf(format: Format, parts: RequestParts): LambdaHttpEvent {
  // Text as text, anything else (multipart, compressed bytes) in base64, as API Gateway and the ALB pass bodies on.
  const isText = parts.body.length === 0 || (isUtf8(parts.body) && !parts.headers.some(([name, value]) => name === 'content-type' && value.startsWith('multipart/')))
  const body = parts.body.length === 0 ? null : isText ? parts.body.toString('utf8') : parts.body.toString('base64')
  const multi: Record<string, string[]> = {}
  for (const [name, value] of parts.headers) (multi[name] ??= []).push(value)
  const single = Object.fromEntries(Object.entries(multi).map(([name, values]) => [name, values[values.length - 1]!]))
  const queryPairs = parts.query === '' ? [] : parts.query.split('&').map((pair) => pair.split('=', 2) as [string, string?])
  if (format === 'v2') {
    const event: APIGatewayProxyEventV2 = {
      version: '2.0',
      routeKey: '$default',
      rawPath: parts.path,
      rawQueryString: parts.query,
      // HTTP APIs join repeated header fields with commas.
      headers: Object.fromEntries(Object.entries(multi).map(([name, values]) => [name, values.join(',')])),
      requestContext: {
        accountId: '123456789012',
        apiId: 'api',
        domainName: 'api.execute-api.us-east-1.amazonaws.com',
        domainPrefix: 'api',
        http: { method: parts.method, path: parts.path, protocol: 'HTTP/1.1', sourceIp: '192.0.2.1', userAgent: 'conformance' },
        requestId: randomUUID(),
        routeKey: '$default',
        stage: '$default',
        time: '02/Dec/2026:01:00:00 +0000',
        timeEpoch: 1_764_637_200_000,
      },
      isBase64Encoded: body !== null && !isText,
      ...(body === null ? {} : { body }),
    }
    return event
  }
  const decoded = (value: string | undefined) => percentDecoded((value ?? '').replaceAll('+', ' '))
  if (format === 'v1') {
    const multiQuery: Record<string, string[]> = {}
    for (const [name, value] of queryPairs) (multiQuery[decoded(name)] ??= []).push(decoded(value))
    const event: APIGatewayProxyEvent = {
      resource: '/{proxy+}',
      path: parts.path,
      httpMethod: parts.method,
      headers: single,
      multiValueHeaders: multi,
      queryStringParameters: queryPairs.length === 0 ? null : Object.fromEntries(Object.entries(multiQuery).map(([name, values]) => [name, values[values.length - 1]!])),
      multiValueQueryStringParameters: queryPairs.length === 0 ? null : multiQuery,
      pathParameters: null,
      stageVariables: null,
      requestContext: {
        accountId: '123456789012',
        apiId: 'api',
        authorizer: null,
        protocol: 'HTTP/1.1',
        httpMethod: parts.method,
        identity: {
          accessKey: null, accountId: null, apiKey: null, apiKeyId: null, caller: null, clientCert: null, cognitoAuthenticationProvider: null,
          cognitoAuthenticationType: null, cognitoIdentityId: null, cognitoIdentityPoolId: null, principalOrgId: null, sourceIp: '192.0.2.1',
          user: null, userAgent: 'conformance', userArn: null,
        },
        path: `/prod${parts.path}`,
        stage: 'prod',
        requestId: randomUUID(),
        requestTimeEpoch: 1_764_637_200_000,
        resourceId: 'abc123',
        resourcePath: '/{proxy+}',
      },
      body,
      isBase64Encoded: body !== null && !isText,
    }
    return event
  }
  const multiQuery: Record<string, string[]> = {}
  // The ALB passes the query as sent, still percent-encoded.
  for (const [name, value] of queryPairs) (multiQuery[name] ??= []).push(value ?? '')
  const event: ALBEvent = {
    requestContext: { elb: { targetGroupArn: 'arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/conformance/abc' } },
    httpMethod: parts.method,
    path: parts.path,
    multiValueQueryStringParameters: multiQuery,
    multiValueHeaders: multi,
    body,
    isBase64Encoded: body !== null && !isText,
  }
  return event
}

/** A Function URL's id: 32 lower-case letters and digits, the first label of its domain. */
const URL_ID = 'a1b2c3d4e5f6g7h8i9j0k1l2m3n4o5p6'

/**
 * A Function URL's event (auth type NONE): payload 2.0, as an HTTP API's, but from the
 * URL's own domain, with the headers Lambda adds to the client's (TLS, `X-Forwarded-*`,
 * a trace id) and the query also parsed, repeats joined with commas, as AWS documents it.
 */
function functionUrlEvent(event: APIGatewayProxyEventV2): APIGatewayProxyEventV2 {
  const added = {
    host: `${URL_ID}.lambda-url.us-east-1.on.aws`,
    'x-amzn-tls-cipher-suite': 'ECDHE-RSA-AES128-GCM-SHA256',
    'x-amzn-tls-version': 'TLSv1.2',
    'x-amzn-trace-id': `Root=1-${randomUUID().replaceAll('-', '').slice(0, 8)}-${randomUUID().replaceAll('-', '').slice(0, 24)}`,
    'x-forwarded-for': '192.0.2.1',
    'x-forwarded-port': '443',
    'x-forwarded-proto': 'https',
  }
  const query: Record<string, string> = {}
  for (const [name, value] of new URLSearchParams(event.rawQueryString)) query[name] = name in query ? `${query[name]},${value}` : value
  return {
    ...event,
    headers: { ...added, ...event.headers },
    ...(event.rawQueryString === '' ? {} : { queryStringParameters: query }),
    requestContext: { ...event.requestContext, apiId: URL_ID, domainName: added.host, domainPrefix: URL_ID },
  }
}

/**
 * A REST API's decoding of a query value: escapes to bytes, read as UTF-8, a sequence
 * that is not UTF-8 as U+FFFD (the event has no other way to carry it).
 */
function percentDecoded(value: string): string {
  const bytes: number[] = []
  for (let i = 0; i < value.length; i++) {
    if (value[i] === '%' && /^[0-9a-f]{2}$/i.test(value.slice(i + 1, i + 3))) {
      bytes.push(Number.parseInt(value.slice(i + 1, i + 3), 16))
      i += 2
    } else bytes.push(...Buffer.from(value[i]!, 'utf8'))
  }
  return new TextDecoder().decode(Uint8Array.from(bytes))
}

/**
 * What a function's result becomes on the wire, as API Gateway or the ALB sends it: a
 * header value as its UTF-8 bytes (a Response holds them one character a byte).
 */
export function responseOf(result: unknown): Response {
  if (result === null || typeof result !== 'object' || !('statusCode' in result)) {
    return new Response(JSON.stringify(result), { status: 200, headers: { 'content-type': 'application/json' } })
  }
  const structured = result as APIGatewayProxyResult & APIGatewayProxyStructuredResultV2 & ALBResult
  const headers = new Headers()
  const wire = (value: unknown) => Buffer.from(String(value), 'utf8').toString('latin1')
  const multi = structured.multiValueHeaders ?? {}
  for (const [name, values] of Object.entries(multi)) for (const value of values) headers.append(name, wire(value))
  for (const [name, value] of Object.entries(structured.headers ?? {})) if (!headers.has(name)) headers.append(name, wire(value))
  for (const cookie of structured.cookies ?? []) headers.append('set-cookie', cookie)
  const status = structured.statusCode ?? 200
  const bytes = structured.body === undefined || structured.body === '' ? null : Buffer.from(structured.body, structured.isBase64Encoded ? 'base64' : 'utf8')
  return new Response([204, 304].includes(status) ? null : bytes, { status, headers })
}

/** The shared route's output as the function returns it, in the event's format. */
function resultOf(format: Format, out: RouteOutput): APIGatewayProxyResult | APIGatewayProxyStructuredResultV2 | ALBResult {
  const cookies = out.headers.filter(([name]) => name.toLowerCase() === 'set-cookie').map(([, value]) => value)
  const others = out.headers.filter(([name]) => name.toLowerCase() !== 'set-cookie')
  const joined = Object.fromEntries(others.map(([name, value]) => [name, value]))
  if (format === 'v2') return { statusCode: out.status, headers: joined, ...(cookies.length > 0 ? { cookies } : {}), body: out.body }
  if (format === 'v1') return { statusCode: out.status, headers: joined, ...(cookies.length > 0 ? { multiValueHeaders: { 'set-cookie': cookies } } : {}), body: out.body }
  const multiValueHeaders: Record<string, string[]> = {}
  for (const [name, value] of out.headers) (multiValueHeaders[name] ??= []).push(value)
  return { statusCode: out.status, statusDescription: String(out.status), multiValueHeaders, body: out.body }
}

function headerOf(event: LambdaHttpEvent, name: string): string | undefined {
  const headers: Record<string, string | string[] | undefined> = ('multiValueHeaders' in event ? event.multiValueHeaders : undefined) ?? event.headers ?? {}
  const found = Object.entries(headers).find(([key]) => key.toLowerCase() === name)?.[1]
  return Array.isArray(found) ? found[found.length - 1] : found
}

/** What payload format 1.0 cannot carry, so its front end cannot pass the case. */
const REST_API_CANNOT: Readonly<Record<string, string>> = {
  'query and form values whose escapes are not UTF-8 are compared as sent: %E9 and %E8 are two requests':
    'a REST API hands the function decoded query values, so two escapes that are not UTF-8 arrive alike (docs/lambda.md)',
  ...REST_API_ENCODING_CANNOT,
}

/** A Lambda front end: the event's format, and for 2.0 whether it comes through a Function URL rather than an HTTP API. */
function lambdaFrontEnd(format: Format, through: 'api' | 'function-url' = 'api'): FrontEnd {
  return {
    name: through === 'function-url' ? 'lambda-url' : `lambda-${format}`,
    ...(format === 'v1' ? { cannot: REST_API_CANNOT } : {}),
    async start(backend, { storeDown, ...options }: AppOptions, state) {
      const handler = makeHttpHandler(
        async (event, _context, idem) => {
          const parts = event.isBase64Encoded ? Buffer.from(event.body ?? '', 'base64') : Buffer.from(event.body ?? '', 'utf8')
          const method = 'httpMethod' in event ? event.httpMethod : event.requestContext.http.method
          const path = 'rawPath' in event ? event.rawPath : event.path
          return resultOf(format, await runRoute(backend, state, { method, path, body: parts.toString('utf8'), idem }))
        },
        {
          ...backend.protection(storeDown ? 'down' : undefined),
          scope: (event) => {
            state.scopeCalls++
            state.onScope?.()
            return tenantOf(headerOf(event, 'authorization'))
          },
          ...(options as IdempotencyOptions<unknown, LambdaHttpEvent>),
        },
      )
      return {
        async send(call) {
          const parts = await partsOf(call)
          if (format === 'v1') {
            const decoded = restApiBody(parts.body, call.contentEncoding)
            if (decoded === undefined) return new Response('Unsupported Media Type', { status: 415 })
            parts.body = decoded
          }
          const made = eventOf(format, parts)
          const event = through === 'function-url' ? functionUrlEvent(made as APIGatewayProxyEventV2) : made
          try {
            return responseOf(await handler(event, lambdaContext(60_000, 'conformance')))
          } catch {
            return new Response('Internal Server Error', { status: 500 })
          }
        },
        close: async () => {},
      }
    },
  }
}

/** API Gateway REST APIs (payload format 1.0). */
export const lambdaV1FrontEnd = lambdaFrontEnd('v1')
/** API Gateway HTTP APIs (payload format 2.0). */
export const lambdaV2FrontEnd = lambdaFrontEnd('v2')
/** Function URLs (payload format 2.0, from the URL's own domain). */
export const lambdaUrlFrontEnd = lambdaFrontEnd('v2', 'function-url')
/** An ALB target group with multi-value headers on. */
export const lambdaAlbFrontEnd = lambdaFrontEnd('alb')
