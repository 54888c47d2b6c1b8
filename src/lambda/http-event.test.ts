// Lambda's HTTP formats read and written: events in the shapes AWS documents for REST
// APIs (1.0), HTTP APIs and Function URLs (2.0) and ALB targets (single- and multi-value
// headers), typed by @types/aws-lambda; bodies both ways in base64; repeated headers,
// cookies and queries.
import type { ALBEvent, APIGatewayProxyEvent, APIGatewayProxyEventV2 } from 'aws-lambda'
import { describe, expect, it } from 'vitest'
import { bareValueJson, httpRequestOf, httpResponseOf, httpResultOf, type LambdaHttpResponse } from './http-event.js'

const BINARY = Uint8Array.of(0x89, 0x50, 0x4e, 0x47, 0x00, 0xff, 0xfe)
const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64')
const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes)

function restEvent(overrides: Partial<APIGatewayProxyEvent> = {}): APIGatewayProxyEvent {
  return {
    resource: '/orders',
    path: '/orders',
    httpMethod: 'POST',
    headers: { 'Idempotency-Key': '"k-1"', Accept: 'text/html', Cookie: 'a=1; b=2', 'Content-Type': 'application/json' },
    multiValueHeaders: { 'Idempotency-Key': ['"k-1"'], Accept: ['application/json', 'text/html'], Cookie: ['a=1; b=2'], 'Content-Type': ['application/json'] },
    queryStringParameters: { q: 'café & co', tag: 'b' },
    multiValueQueryStringParameters: { q: ['café & co'], tag: ['a', 'b'] },
    pathParameters: null,
    stageVariables: null,
    requestContext: {
      accountId: '123456789012',
      apiId: 'id',
      authorizer: null,
      protocol: 'HTTP/1.1',
      httpMethod: 'POST',
      identity: {
        accessKey: null, accountId: null, apiKey: null, apiKeyId: null, caller: null, clientCert: null, cognitoAuthenticationProvider: null,
        cognitoAuthenticationType: null, cognitoIdentityId: null, cognitoIdentityPoolId: null, principalOrgId: null, sourceIp: '192.0.2.1',
        user: null, userAgent: 'curl/8.5.0', userArn: null,
      },
      path: '/prod/orders',
      stage: 'prod',
      requestId: 'c6af9ac6-7b61-11e6-9a41-93e8deadbeef',
      requestTimeEpoch: 1_764_637_200_000,
      resourceId: '123456',
      resourcePath: '/orders',
    },
    body: '{"amount":1500}',
    isBase64Encoded: false,
    ...overrides,
  }
}

function httpApiEvent(overrides: Partial<APIGatewayProxyEventV2> = {}): APIGatewayProxyEventV2 {
  return {
    version: '2.0',
    routeKey: 'POST /orders',
    rawPath: '/orders',
    rawQueryString: 'tag=a&tag=b&q=caf%C3%A9',
    cookies: ['a=1', 'b=2'],
    headers: { 'idempotency-key': '"k-2"', accept: 'application/json,text/html', 'content-type': 'application/octet-stream' },
    queryStringParameters: { tag: 'a,b', q: 'café' },
    requestContext: {
      accountId: '123456789012',
      apiId: 'api-id',
      domainName: 'id.execute-api.us-east-1.amazonaws.com',
      domainPrefix: 'id',
      http: { method: 'POST', path: '/orders', protocol: 'HTTP/1.1', sourceIp: '192.0.2.1', userAgent: 'curl/8.5.0' },
      requestId: 'id',
      routeKey: 'POST /orders',
      stage: '$default',
      time: '02/Dec/2026:01:00:00 +0000',
      timeEpoch: 1_764_637_200_000,
    },
    body: b64(BINARY),
    isBase64Encoded: true,
    ...overrides,
  }
}

function albEvent(multiValue: boolean): ALBEvent {
  const single = { 'idempotency-key': '"k-3"', accept: 'text/html', 'content-type': 'text/plain; charset=utf-8' }
  return {
    requestContext: { elb: { targetGroupArn: 'arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/lambda/abc' } },
    httpMethod: 'PUT',
    path: '/orders/42',
    ...(multiValue
      ? { multiValueQueryStringParameters: { q: ['caf%C3%A9'], tag: ['a', 'b'] }, multiValueHeaders: { ...Object.fromEntries(Object.entries(single).map(([k, v]) => [k, [v]])), accept: ['application/json', 'text/html'] } }
      : { queryStringParameters: { q: 'caf%C3%A9', tag: 'b' }, headers: single }),
    body: 'naïve',
    isBase64Encoded: false,
  }
}

describe('httpRequestOf', () => {
  it('a REST API event (1.0): repeated headers joined, the decoded query encoded again, the body as bytes', () => {
    const request = httpRequestOf(restEvent())
    expect(request).toMatchObject({ format: 'api-gateway-v1', method: 'POST', path: '/orders', query: 'q=caf%C3%A9%20%26%20co&tag=a&tag=b' })
    expect(request.header('idempotency-key')).toBe('"k-1"')
    expect(request.header('ACCEPT')).toBe('application/json, text/html')
    expect(request.header('cookie')).toBe('a=1; b=2')
    expect(request.header('x-missing')).toBeUndefined()
    expect(text(request.body)).toBe('{"amount":1500}')
    const binary = httpRequestOf(restEvent({ body: b64(BINARY), isBase64Encoded: true }))
    expect(binary.body).toEqual(BINARY)
    expect(httpRequestOf(restEvent({ body: null })).body).toEqual(new Uint8Array(0))
  })

  it('an HTTP API or Function URL event (2.0): the raw query, cookies back in a cookie header, a base64 body decoded', () => {
    const request = httpRequestOf(httpApiEvent())
    expect(request).toMatchObject({ format: 'api-gateway-v2', method: 'POST', path: '/orders', query: 'tag=a&tag=b&q=caf%C3%A9' })
    expect(request.header('Idempotency-Key')).toBe('"k-2"')
    expect(request.header('cookie')).toBe('a=1; b=2')
    expect(request.body).toEqual(BINARY)
  })

  it('an ALB event, with single- and multi-value headers: the query as the client sent it', () => {
    const single = httpRequestOf(albEvent(false))
    expect(single).toMatchObject({ format: 'alb', multiValue: false, method: 'PUT', path: '/orders/42', query: 'q=caf%C3%A9&tag=b' })
    expect(single.header('accept')).toBe('text/html')
    expect(text(single.body)).toBe('naïve')
    const multi = httpRequestOf(albEvent(true))
    expect(multi).toMatchObject({ format: 'alb', multiValue: true, query: 'q=caf%C3%A9&tag=a&tag=b' })
    expect(multi.header('accept')).toBe('application/json, text/html')
    expect(multi.header('idempotency-key')).toBe('"k-3"')
  })
})

describe('httpResponseOf and httpResultOf', () => {
  const cookies: LambdaHttpResponse = {
    status: 201,
    headers: [['Content-Type', 'application/json'], ['Set-Cookie', 'a=1; Path=/'], ['Set-Cookie', 'b=2; Path=/'], ['Vary', 'Accept'], ['Vary', 'Origin']],
    body: '{"id":"o-1"}',
  }

  it('2.0: Set-Cookie in cookies, other repeats joined, a text body as text; read back the same', () => {
    const result = httpResultOf(cookies, { format: 'api-gateway-v2', multiValue: false })
    expect(result).toEqual({ statusCode: 201, headers: { 'Content-Type': 'application/json', Vary: 'Accept, Origin' }, cookies: ['a=1; Path=/', 'b=2; Path=/'], body: '{"id":"o-1"}', isBase64Encoded: false })
    const back = httpResponseOf(result)
    expect(back.status).toBe(201)
    expect(back.headers.filter(([name]) => name === 'set-cookie').map(([, value]) => value)).toEqual(['a=1; Path=/', 'b=2; Path=/'])
    expect(back.body).toBe('{"id":"o-1"}')
  })

  it('1.0: Set-Cookie in multiValueHeaders; ALB multi-value: every header multi-value, with a status line; ALB single-value: the last cookie', () => {
    expect(httpResultOf(cookies, { format: 'api-gateway-v1', multiValue: false })).toEqual({
      statusCode: 201,
      headers: { 'Content-Type': 'application/json', Vary: 'Accept, Origin' },
      multiValueHeaders: { 'Set-Cookie': ['a=1; Path=/', 'b=2; Path=/'] },
      body: '{"id":"o-1"}',
      isBase64Encoded: false,
    })
    expect(httpResultOf(cookies, { format: 'alb', multiValue: true })).toEqual({
      statusCode: 201,
      statusDescription: '201 Created',
      multiValueHeaders: { 'Content-Type': ['application/json'], 'Set-Cookie': ['a=1; Path=/', 'b=2; Path=/'], Vary: ['Accept', 'Origin'] },
      body: '{"id":"o-1"}',
      isBase64Encoded: false,
    })
    expect(httpResultOf(cookies, { format: 'alb', multiValue: false })).toMatchObject({ headers: { 'Set-Cookie': 'b=2; Path=/', Vary: 'Accept, Origin' } })
  })

  it('a body keeps the form it was answered in, whatever its media type: text as text, base64 as base64, in every format', () => {
    for (const format of ['api-gateway-v1', 'api-gateway-v2', 'alb'] as const) {
      for (const type of ['image/png', 'text/plain', 'application/x-ndjson', undefined]) {
        const headers: Array<[string, string]> = type === undefined ? [] : [['content-type', type]]
        const binary = httpResultOf({ status: 200, headers, body: BINARY }, { format, multiValue: false })
        expect(binary).toMatchObject({ isBase64Encoded: true, body: b64(BINARY) })
        expect(httpResponseOf(binary).body).toEqual(new Uint8Array(BINARY))
        // UTF-8 text answered as base64 stays base64; text stays text.
        const utf8 = new TextEncoder().encode('{"id":1}\n')
        expect(httpResponseOf(httpResultOf({ status: 200, headers, body: utf8 }, { format, multiValue: false })).body).toEqual(utf8)
        const textual = httpResultOf({ status: 200, headers, body: '{"id":1}\n' }, { format, multiValue: false })
        expect(textual).toMatchObject({ isBase64Encoded: false, body: '{"id":1}\n' })
        expect(httpResponseOf(textual).body).toBe('{"id":1}\n')
      }
    }
  })

  it("a 2.0 function's bare value is the JSON Lambda's runtime sends; a structured result is none; a 1.0 result's multi-value headers replace its single ones", () => {
    expect(bareValueJson({ orderId: 'o-1' }, 'api-gateway-v2')).toBe('{"orderId":"o-1"}')
    expect(bareValueJson('Hello from Lambda!', 'api-gateway-v2')).toBe('"Hello from Lambda!"')
    expect(bareValueJson(undefined, 'api-gateway-v2')).toBe('null')
    expect(bareValueJson({ statusCode: 201 }, 'api-gateway-v2')).toBeUndefined()
    expect(bareValueJson('text', 'api-gateway-v1')).toBeUndefined()
    const read = httpResponseOf({ statusCode: 200, headers: { 'X-A': 'single', 'X-B': 1 }, multiValueHeaders: { 'x-a': ['one', 'two'] }, body: 'ok' })
    expect(read.headers).toEqual([['X-B', '1'], ['x-a', 'one'], ['x-a', 'two']])
    expect(read.body).toBe('ok')
  })
})
