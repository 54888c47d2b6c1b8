import type { ALBEvent, ALBResult, APIGatewayProxyEvent, APIGatewayProxyEventV2, APIGatewayProxyResult, APIGatewayProxyStructuredResultV2 } from 'aws-lambda'
import { tooLarge } from '../http/body.js'
import type { HttpAnswer, HttpBody, HttpRequest } from '../http/exchange.js'

/**
 * An HTTP request as Lambda delivers it: API Gateway's REST APIs (payload format 1.0),
 * HTTP APIs and Function URLs (2.0), and Application Load Balancer targets.
 */
export type LambdaHttpEvent = APIGatewayProxyEvent | APIGatewayProxyEventV2 | ALBEvent

/**
 * What a function answers an HTTP event with: a structured result of the event's format,
 * or, for payload format 2.0, any JSON value (API Gateway answers it as a 200 JSON body).
 */
export type LambdaHttpResult = APIGatewayProxyResult | APIGatewayProxyStructuredResultV2 | ALBResult

/** Which of Lambda's HTTP formats an event came in, and so which one to answer in. */
export type LambdaHttpFormat = 'api-gateway-v1' | 'api-gateway-v2' | 'alb'

/** An HTTP event as a request: the method, path, raw query, a header lookup and the body's bytes. */
export interface LambdaHttpRequest {
  readonly format: LambdaHttpFormat
  /** ALB only: the target group sends (and wants back) multi-value headers. */
  readonly multiValue: boolean
  readonly method: string
  readonly path: string
  /** The query string without `?`, percent-encoded. */
  readonly query: string
  /**
   * A header's value by name (any case); fields sent more than once are joined with `, `
   * (`cookie` with `; `), as a proxy would join them. Undefined when absent.
   */
  header(name: string): string | undefined
  readonly body: Uint8Array
}

/**
 * An HTTP response in neutral form: status, header pairs (names as written, repeats kept)
 * and the body as it is answered: text as text (`isBase64Encoded` false), bytes in base64.
 */
export interface LambdaHttpResponse {
  readonly status: number
  readonly headers: ReadonlyArray<readonly [string, string]>
  /** A string is answered as text; bytes as base64 (`isBase64Encoded`). */
  readonly body: HttpBody
}

const utf8 = new TextEncoder()

type HeaderValue = boolean | number | string

/** Reads an HTTP event of any of Lambda's formats. */
export function httpRequestOf(event: LambdaHttpEvent): LambdaHttpRequest {
  if (isAlb(event)) {
    const alb = event
    const multiValue = alb.multiValueHeaders !== undefined
    return {
      format: 'alb',
      multiValue,
      method: alb.httpMethod,
      path: alb.path,
      // ALB passes the query as the client sent it, still percent-encoded.
      query: rawPairs(multiValue ? alb.multiValueQueryStringParameters : singleValues(alb.queryStringParameters)),
      header: headerLookup(multiValue ? alb.multiValueHeaders : singleValues(alb.headers)),
      body: bodyOf(alb.body, alb.isBase64Encoded),
    }
  }
  if (isV2(event)) {
    const { cookies = [], headers } = event
    const lookup = headerLookup(singleValues(headers))
    return {
      format: 'api-gateway-v2',
      multiValue: false,
      method: event.requestContext.http.method,
      path: event.rawPath,
      query: event.rawQueryString,
      // HTTP APIs take cookies out of the headers, into `cookies`.
      header: (name) => (name.toLowerCase() === 'cookie' && cookies.length > 0 ? cookies.join('; ') : lookup(name)),
      body: bodyOf(event.body ?? null, event.isBase64Encoded),
    }
  }
  const rest = event
  return {
    format: 'api-gateway-v1',
    multiValue: false,
    method: rest.httpMethod,
    path: rest.path,
    // REST APIs decode the query: encode it again, pairs in the order API Gateway lists them.
    query: encodedPairs(rest.multiValueQueryStringParameters ?? singleValues(rest.queryStringParameters)),
    header: headerLookup(rest.multiValueHeaders ?? singleValues(rest.headers)),
    body: bodyOf(rest.body, rest.isBase64Encoded),
  }
}

function isAlb(event: LambdaHttpEvent): event is ALBEvent {
  return 'elb' in event.requestContext
}

// REST APIs send `version: '1.0'` too when they send a version at all; 2.0 is HTTP APIs and Function URLs.
function isV2(event: APIGatewayProxyEvent | APIGatewayProxyEventV2): event is APIGatewayProxyEventV2 {
  return 'version' in event && event.version === '2.0'
}

/** An HTTP event's request as the middleware and the webhook receiver read it (`exchange.ts`). */
export function exchangeRequest(request: LambdaHttpRequest): HttpRequest {
  return {
    method: request.method.toUpperCase(),
    path: request.path,
    query: request.query,
    // A REST API (payload 1.0) decodes a compressed body before it calls the function
    // and leaves Content-Encoding as the client sent it: the body has none any more.
    header: (name) => (name === 'content-encoding' && request.format === 'api-gateway-v1' ? null : (request.header(name) ?? null)),
    body: async (limit) => {
      if (request.body.byteLength > limit) throw tooLarge(limit)
      return request.body
    },
  }
}

/** An answer of the exchange's (header pairs flat) as a neutral response, for `httpResultOf`. */
export function neutralAnswer(answer: HttpAnswer): LambdaHttpResponse {
  const headers: Array<[string, string]> = []
  for (let i = 0; i + 1 < answer.headers.length; i += 2) headers.push([answer.headers[i]!, answer.headers[i + 1]!])
  return { status: answer.status, headers, body: answer.body }
}

/**
 * The JSON text of a payload 2.0 result without `statusCode`: a bare value, which API
 * Gateway and Function URLs answer for the function (a 200, `content-type:
 * application/json`, the value as its body), serialised as Lambda's runtime sends it
 * (`undefined` as null). Undefined for a structured result, and in the other formats.
 */
export function bareValueJson(result: unknown, format: LambdaHttpFormat): string | undefined {
  if (format !== 'api-gateway-v2' || (result !== null && typeof result === 'object' && 'statusCode' in result)) return undefined
  return JSON.stringify(result) ?? 'null'
}

/** What a function answered in a structured result, in neutral form, its body as answered (text, or base64's bytes). */
export function httpResponseOf(result: unknown): LambdaHttpResponse {
  const structured = (result ?? {}) as Partial<APIGatewayProxyResult & APIGatewayProxyStructuredResultV2>
  const headers: Array<[string, string]> = []
  const multi = structured.multiValueHeaders ?? {}
  const inMulti = new Set(Object.keys(multi).map((name) => name.toLowerCase()))
  for (const [name, value] of Object.entries(structured.headers ?? {})) {
    // API Gateway and ALB send a multi-value header in place of the single one of the same name.
    if (!inMulti.has(name.toLowerCase())) headers.push([name, String(value)])
  }
  for (const [name, values] of Object.entries(multi)) for (const value of values) headers.push([name, String(value)])
  for (const cookie of structured.cookies ?? []) headers.push(['set-cookie', cookie])
  const body = structured.body ?? ''
  return {
    status: typeof structured.statusCode === 'number' ? structured.statusCode : 200,
    headers,
    body: structured.isBase64Encoded === true ? bodyOf(body, true) : body,
  }
}

/**
 * A neutral response in the format of the request: a text body as text, bytes as base64
 * (`isBase64Encoded`); `Set-Cookie` in `cookies` (2.0) or `multiValueHeaders` (1.0, ALB
 * in multi-value mode); other repeated headers joined with `, `, or as a multi-value
 * header where the format has them.
 */
export function httpResultOf(response: LambdaHttpResponse, request: Pick<LambdaHttpRequest, 'format' | 'multiValue'>): LambdaHttpResult {
  const isBase64Encoded = typeof response.body !== 'string'
  const body = typeof response.body === 'string' ? response.body : Buffer.from(response.body.buffer, response.body.byteOffset, response.body.byteLength).toString('base64')
  const grouped = new Map<string, { name: string; values: string[] }>()
  for (const [name, value] of response.headers) {
    const entry = grouped.get(name.toLowerCase())
    if (entry === undefined) grouped.set(name.toLowerCase(), { name, values: [value] })
    else entry.values.push(value)
  }
  if (request.format === 'api-gateway-v2') {
    const headers: Record<string, HeaderValue> = {}
    const cookies: string[] = []
    for (const [lower, { name, values }] of grouped) {
      if (lower === 'set-cookie') cookies.push(...values)
      else headers[name] = values.join(', ')
    }
    return { statusCode: response.status, headers, ...(cookies.length > 0 ? { cookies } : {}), body, isBase64Encoded }
  }
  if (request.format === 'alb' && request.multiValue) {
    const multiValueHeaders: Record<string, HeaderValue[]> = {}
    for (const { name, values } of grouped.values()) multiValueHeaders[name] = values
    return { statusCode: response.status, statusDescription: statusLine(response.status), multiValueHeaders, body, isBase64Encoded }
  }
  const headers: Record<string, HeaderValue> = {}
  const multiValueHeaders: Record<string, HeaderValue[]> = {}
  for (const [lower, { name, values }] of grouped) {
    if (values.length === 1) headers[name] = values[0]!
    // An ALB in single-value mode takes one value per name: the last, as a browser keeps the last Set-Cookie of a name.
    else if (request.format === 'alb') headers[name] = lower === 'set-cookie' ? values[values.length - 1]! : values.join(', ')
    else if (lower === 'set-cookie') multiValueHeaders[name] = values
    else headers[name] = values.join(', ')
  }
  if (request.format === 'alb') return { statusCode: response.status, statusDescription: statusLine(response.status), headers, body, isBase64Encoded }
  return { statusCode: response.status, headers, ...(Object.keys(multiValueHeaders).length > 0 ? { multiValueHeaders } : {}), body, isBase64Encoded }
}

/** `200 OK`: the status line an ALB sends (it needs one; API Gateway does not). */
function statusLine(status: number): string {
  return `${status} ${REASONS[status] ?? ''}`.trimEnd()
}

const REASONS: Readonly<Record<number, string>> = {
  200: 'OK', 201: 'Created', 202: 'Accepted', 204: 'No Content', 301: 'Moved Permanently', 302: 'Found', 303: 'See Other', 304: 'Not Modified',
  307: 'Temporary Redirect', 308: 'Permanent Redirect', 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found',
  405: 'Method Not Allowed', 409: 'Conflict', 410: 'Gone', 412: 'Precondition Failed', 413: 'Content Too Large', 415: 'Unsupported Media Type',
  422: 'Unprocessable Content', 428: 'Precondition Required', 429: 'Too Many Requests', 500: 'Internal Server Error', 502: 'Bad Gateway',
  503: 'Service Unavailable', 504: 'Gateway Timeout',
}

function bodyOf(body: string | null, isBase64Encoded: boolean): Uint8Array {
  if (body === null || body.length === 0) return new Uint8Array(0)
  return isBase64Encoded ? new Uint8Array(Buffer.from(body, 'base64')) : utf8.encode(body)
}

function singleValues(values: Record<string, string | undefined> | null | undefined): Record<string, string[]> | undefined {
  if (values === null || values === undefined) return undefined
  const multi: Record<string, string[]> = {}
  for (const [name, value] of Object.entries(values)) if (value !== undefined) multi[name] = [value]
  return multi
}

function headerLookup(values: Record<string, string[] | undefined> | null | undefined): (name: string) => string | undefined {
  const byName = new Map<string, string[]>()
  for (const [name, list] of Object.entries(values ?? {})) {
    if (list === undefined || list.length === 0) continue
    const lower = name.toLowerCase()
    byName.set(lower, [...(byName.get(lower) ?? []), ...list])
  }
  return (name) => {
    const lower = name.toLowerCase()
    const list = byName.get(lower)
    return list === undefined ? undefined : list.join(lower === 'cookie' ? '; ' : ', ')
  }
}

function rawPairs(values: Record<string, string[] | undefined> | null | undefined): string {
  return Object.entries(values ?? {}).flatMap(([name, list]) => (list ?? []).map((value) => `${name}=${value}`)).join('&')
}

function encodedPairs(values: Record<string, string[] | undefined> | null | undefined): string {
  return Object.entries(values ?? {}).flatMap(([name, list]) => (list ?? []).map((value) => `${encodeURIComponent(name)}=${encodeURIComponent(value)}`)).join('&')
}
