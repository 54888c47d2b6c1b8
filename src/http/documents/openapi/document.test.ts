import { compileErrors, validate } from '@readme/openapi-parser'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { InvalidOptionError } from '../../../core/errors/invalid-option.js'
import { parseIdempotencyKey } from '../../../headers/idempotency-key.js'
import { idempotencyOpenApi } from './document.js'

type Json = Record<string, any>
type Doc = { openapi: string } & Json

const ok = { description: 'OK', content: { 'application/json': { schema: { type: 'object' } } } }

function shop(openapi = '3.1.0'): Doc {
  return {
    openapi,
    info: { title: 'Shop', version: '1' },
    paths: {
      '/orders': { get: { operationId: 'listOrders', responses: { 200: ok } }, post: { operationId: 'createOrder', responses: { 201: ok } } },
      '/orders/{id}': {
        parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'integer' } }],
        patch: { operationId: 'updateOrder', responses: { 200: ok } },
        delete: { operationId: 'deleteOrder', responses: { 204: { description: 'Deleted' } } },
      },
      '/orders/{id}/items': { post: { responses: { 201: ok } }, parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'integer' } }] },
      '/Webhooks/': { post: { operationId: 'receive', responses: { 204: { description: 'Received' } } } },
    },
  }
}

function described(document: Json): string[] {
  const names: string[] = []
  for (const [path, item] of Object.entries(document.paths as Json)) {
    for (const [method, op] of Object.entries(item as Json)) {
      if (Array.isArray((op as Json).parameters) && (op as Json).parameters.some((p: Json) => p.name === 'Idempotency-Key')) names.push(`${method.toUpperCase()} ${path}`)
    }
  }
  return names.sort()
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object') {
    for (const inner of Object.values(value)) deepFreeze(inner)
    Object.freeze(value)
  }
  return value
}

async function expectValid(document: Json): Promise<void> {
  const result = await validate(structuredClone(document) as never)
  expect(result.valid, result.valid ? '' : compileErrors(result)).toBe(true)
}

describe('idempotencyOpenApi: which operations', () => {
  it('every POST and PATCH by default, whatever their path', () => {
    expect(described(idempotencyOpenApi(shop(), {}))).toEqual(['PATCH /orders/{id}', 'POST /Webhooks/', 'POST /orders', 'POST /orders/{id}/items'])
  })

  it('methods: the operations of those methods only', () => {
    expect(described(idempotencyOpenApi(shop(), { methods: ['DELETE', 'post'] }))).toEqual(['DELETE /orders/{id}', 'POST /Webhooks/', 'POST /orders', 'POST /orders/{id}/items'])
  })

  it.each([
    [['/orders'], ['POST /orders']],
    [['/orders/*'], ['PATCH /orders/{id}', 'POST /orders', 'POST /orders/{id}/items']],
    // A parameter stands for any one segment: an instance reaches its template.
    [['/orders/42'], ['PATCH /orders/{id}']],
    [['/orders/42/*'], ['PATCH /orders/{id}', 'POST /orders/{id}/items']],
    [['/orders/42/items'], ['POST /orders/{id}/items']],
    // Compared as routingPath: case, duplicate and trailing slashes, escapes do not count.
    [['/WEBHOOKS'], ['POST /Webhooks/']],
    [['//webhooks/'], ['POST /Webhooks/']],
    [['/%6Frders'], ['POST /orders']],
    [['/*'], ['PATCH /orders/{id}', 'POST /Webhooks/', 'POST /orders', 'POST /orders/{id}/items']],
    [['/payments/*'], []],
    // A regular expression: on the template as written, or on a sample instance (an integer id: 1).
    [[/^\/orders\/\d+$/], ['PATCH /orders/{id}']],
    [[/\/items$/], ['POST /orders/{id}/items']],
    [[/^\/orders\/\{id\}/], ['PATCH /orders/{id}', 'POST /orders/{id}/items']],
  ] as Array<[Array<string | RegExp>, string[]]>)('routes %s', (routes, expected) => {
    expect(described(idempotencyOpenApi(shop(), { routes }))).toEqual(expected)
  })

  it('operations: exactly those, by operationId or METHOD /path; routes is not consulted', () => {
    const document = idempotencyOpenApi(shop(), { routes: () => true }, { operations: ['createOrder', 'PATCH /orders/{id}'] })
    expect(described(document)).toEqual(['PATCH /orders/{id}', 'POST /orders'])
  })

  it('refuses a routes function without operations, and an operation that is not there or not protected', () => {
    expect(() => idempotencyOpenApi(shop(), { routes: () => true })).toThrow(InvalidOptionError)
    expect(() => idempotencyOpenApi(shop(), {}, { operations: ['createOrdr'] })).toThrow(/"createOrdr", which is no operation/)
    expect(() => idempotencyOpenApi(shop(), {}, { operations: ['POST /orders/{orderId}'] })).toThrow(/no operation of the document/)
    expect(() => idempotencyOpenApi(shop(), {}, { operations: ['listOrders'] })).toThrow(/GET \/orders, but the middleware protects POST, PATCH only/)
    expect(() => idempotencyOpenApi(shop(), {}, { operation: ['createOrder'] } as never)).toThrow(/"operation" is not an option; did you mean "operations"/)
    // The middleware's own refusals, word for word.
    expect(() => idempotencyOpenApi(shop(), { ttlMs: -1 })).toThrow(/option "ttlMs"/)
  })

  it('refuses what is not OpenAPI 3.0 or 3.1', () => {
    expect(() => idempotencyOpenApi({ swagger: '2.0' } as never, {})).toThrow(TypeError)
    expect(() => idempotencyOpenApi({ ...shop(), openapi: '4.0.0' }, {})).toThrow(TypeError)
  })
})

describe('idempotencyOpenApi: what a protected operation gets', () => {
  it('a valid 3.0 and 3.1 document; the input is not changed and what is not described is shared', async () => {
    for (const version of ['3.0.3', '3.1.0']) {
      const input = deepFreeze(shop(version))
      const output = idempotencyOpenApi(input, { routes: ['/orders'] })
      await expectValid(output)
      expect(output.paths['/orders'].get).toBe(input.paths['/orders'].get)
      expect(output.paths['/orders/{id}']).toBe(input.paths['/orders/{id}'])
    }
  })

  it('the parameter states the options: required or not, strict or not, the retention', () => {
    const parameter = (options: object): Json => idempotencyOpenApi(shop(), options).paths['/orders'].post.parameters[0]
    expect(parameter({})).toMatchObject({ name: 'Idempotency-Key', in: 'header', required: true })
    expect(parameter({}).description).toContain('kept for 24 hours')
    expect(parameter({}).description).toContain('a bare value without quotes is accepted')
    expect(parameter({ required: false, ttlMs: 2 * 86_400_000, strict: true })).toMatchObject({ required: false })
    expect(parameter({ required: false, ttlMs: 2 * 86_400_000, strict: true }).description).toMatch(/kept for 2 days[\s\S]*Bare values without quotes are refused[\s\S]*Optional/)
    // No missing-key problem when a key is optional.
    const optional = idempotencyOpenApi(shop(), { required: false })
    expect(optional.paths['/orders'].post.responses['400'].content['application/problem+json'].schema.allOf[1].properties.code.enum).toEqual(['invalid-key'])
  })

  it('the key pattern accepts exactly the header values the parser accepts', () => {
    for (const strict of [false, true]) {
      const pattern = new RegExp(idempotencyOpenApi(shop(), { strict }).paths['/orders'].post.parameters[0].schema.pattern, 'u')
      const accepts = (value: string): boolean => {
        try {
          parseIdempotencyKey(value, { strict })
          return true
        } catch {
          return false
        }
      }
      const samples = ['"abc"', 'abc', '"a\\"b"', '"a\\\\b"', '"a b"', 'a,b', 'a;b', '"a', '""', '', `"${'k'.repeat(255)}"`, `"${'k'.repeat(256)}"`, 'k'.repeat(255), 'k'.repeat(256), `"${'\\"'.repeat(255)}"`, '"é"', '"a\\b"']
      for (const value of samples) expect(pattern.test(value), `${strict ? 'strict ' : ''}${value.slice(0, 20)}`).toBe(accepts(value))
      fc.assert(
        fc.property(fc.oneof(fc.string({ unit: fc.constantFrom('"', '\\', ',', ';', ' ', 'a', '~', '!', 'é') }), fc.string()), (body) => {
          for (const value of [body, `"${body}"`]) if (value.trim() === value) expect(pattern.test(value), value).toBe(accepts(value))
        }),
      )
    }
  })

  it('merges with the operation\'s own response for a status (a $ref), keeps its content and replays it', async () => {
    const document = shop('3.0.3')
    document.components = { responses: { BadRequest: { description: 'Invalid order', content: { 'application/json': { schema: { type: 'object' } } } } } }
    document.paths['/orders'].post.responses['400'] = { $ref: '#/components/responses/BadRequest' }
    document.paths['/orders'].post.parameters = [{ name: 'idempotency-key', in: 'header', schema: { type: 'string' } }]
    const output = idempotencyOpenApi(document, { routes: ['/orders'] })
    await expectValid(output)
    const post = output.paths['/orders'].post
    expect(post.parameters.map((p: Json) => p.name)).toEqual(['Idempotency-Key'])
    expect(Object.keys(post.responses['400'].content)).toEqual(['application/json', 'application/problem+json'])
    expect(post.responses['400'].description).toMatch(/^Invalid order\n\n`missing-key`/)
    expect(Object.keys(post.responses['400'].headers)).toEqual(['Idempotent-Replayed', 'Idempotent-Body-Omitted'])
    // The shared response stays as it was for everyone else.
    expect(output.components.responses.BadRequest).toBe(document.components.responses.BadRequest)
    // idem's own problems are not replayed: no replay header on them.
    expect(post.responses['409'].headers).toEqual({ 'Retry-After': expect.objectContaining({ required: true }) })
  })

  it('a document that has a Problem schema of its own: idem\'s is named otherwise, or the call fails', () => {
    const document = shop()
    document.components = { schemas: { Problem: { type: 'object' } } }
    expect(() => idempotencyOpenApi(document, {})).toThrow(/components.schemas.Problem of its own[\s\S]*"problemSchema"/)
    const output = idempotencyOpenApi(document, {}, { problemSchema: 'IdempotencyProblem' })
    expect(output.components.schemas.Problem).toEqual({ type: 'object' })
    expect(output.paths['/orders'].post.responses['409'].content['application/problem+json'].schema.allOf[0]).toEqual({ $ref: '#/components/schemas/IdempotencyProblem' })
  })

  it('the problem type URIs follow problemTypes', () => {
    const output = idempotencyOpenApi(shop(), { problemTypes: 'https://docs.example.com/errors' })
    expect(output.paths['/orders'].post.responses['422'].content['application/problem+json'].schema.allOf[1].properties.type.enum).toEqual(['https://docs.example.com/errors#fingerprint-mismatch'])
  })
})
