// idem's contract in the OpenAPI document each framework's own generator makes: an app
// with protected and unprotected routes, its document from @fastify/swagger,
// @nestjs/swagger or @hono/zod-openapi through idem's integration, validated by
// @readme/openapi-parser; exactly the protected operations gained the Idempotency-Key
// parameter, idem's problems and the replay header, and the running app agrees
// (a protected route refuses a request without a key, an unprotected one serves it).
// Koa has no generator of its own: the app's own document, described by
// idempotencyOpenApi from the options its middleware is given, the same way.
import 'reflect-metadata'
import swagger from '@fastify/swagger'
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi'
import { Controller, Get, Module, Param, Patch, Post, UseInterceptors, type INestApplication } from '@nestjs/common'
import { NestFactory } from '@nestjs/core'
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger'
import Fastify from 'fastify'
import Koa, { type Context } from 'koa'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { InvalidOptionError } from '../../src/core/errors/invalid-option.js'
import { idempotencyPolicy, type IdempotencyOptions, type IdempotencyPolicyDocument } from '../../src/http/fetch/index.js'
import { idempotency as koaIdempotency } from '../../src/http/koa.js'
import { IdempotencyInterceptor, IdempotencyModule } from '../../src/http/nestjs.js'
import { idempotencyOpenApi } from '../../src/http/documents/openapi/index.js'
import { idempotencyWithOpenApi as fastifyWithOpenApi } from '../../src/http/documents/openapi/fastify.js'
import { idempotencyWithOpenApi as honoWithOpenApi } from '../../src/http/documents/openapi/hono.js'
import { idempotencyOpenApiDocument } from '../../src/http/documents/openapi/nestjs.js'
import { memoryStore } from '../../src/stores/memory/index.js'
import { describedOperations, expectDescribed, expectValidOpenApi } from './support/openapi.js'

const scope = (): string => 'acct'
const post = (url: string, headers: Record<string, string> = {}): Promise<Response> =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: '{}' })

describe('@fastify/swagger: idempotencyWithOpenApi', () => {
  async function app(options: Parameters<typeof fastifyWithOpenApi>[0], openApi?: Parameters<typeof fastifyWithOpenApi>[1]) {
    const idem = fastifyWithOpenApi(options, openApi)
    const fastify = Fastify()
    await fastify.register(swagger, { openapi: { openapi: '3.0.3', info: { title: 'Orders', version: '1' } }, transformObject: idem.transformObject })
    const created = { 201: { type: 'object', properties: { id: { type: 'string' } } } }
    fastify.get('/health', async () => ({ ok: true }))
    fastify.post('/webhooks', { schema: { response: { 200: { type: 'object' } } } }, async () => ({}))
    await fastify.register(async (orders) => {
      await orders.register(idem.plugin)
      orders.post('/orders', { schema: { operationId: 'createOrder', response: created } }, async (_request, reply) => reply.code(201).send({ id: '1' }))
      orders.patch('/orders/:id', { schema: { response: { 200: { type: 'object' } } } }, async () => ({}))
      orders.get('/orders/:id', async () => ({}))
      orders.post('/orders/:id/notes', { schema: { response: { 201: { type: 'object' } } } }, async (_request, reply) => reply.code(201).send({}))
    })
    await fastify.ready()
    return fastify
  }

  it('describes the POST and PATCH routes declared after the plugin, and no other; the document is valid and the app agrees', async () => {
    const fastify = await app({ store: memoryStore(), scope })
    try {
      const document = fastify.swagger() as Record<string, any>
      await expectValidOpenApi(document)
      expectDescribed(document, ['POST /orders', 'PATCH /orders/{id}', 'POST /orders/{id}/notes'])
      expect(JSON.stringify(document)).not.toContain('x-idem-protected')
      const url = await fastify.listen({ port: 0, host: '127.0.0.1' })
      expect((await post(`${url}/orders`)).status).toBe(400)
      expect((await post(`${url}/webhooks`)).status).toBe(200)
    } finally {
      await fastify.close()
    }
  })

  it('applies the routes list to the marked routes; `operations` replaces it; a routes function needs it', async () => {
    const listed = await app({ store: memoryStore(), scope, routes: ['/orders'] })
    try {
      expectDescribed(listed.swagger() as Record<string, any>, ['POST /orders'])
    } finally {
      await listed.close()
    }
    const named = await app({ store: memoryStore(), scope, routes: (req) => !req.url.endsWith('/notes') }, { operations: ['createOrder', 'PATCH /orders/{id}'] })
    try {
      const document = named.swagger() as Record<string, any>
      await expectValidOpenApi(document)
      expectDescribed(document, ['POST /orders', 'PATCH /orders/{id}'])
    } finally {
      await named.close()
    }
    const predicate = await app({ store: memoryStore(), scope, routes: () => true })
    try {
      expect(() => predicate.swagger()).toThrow(/"routes" option is a function[\s\S]*"operations"/)
    } finally {
      await predicate.close()
    }
  })
})

describe('@nestjs/swagger: idempotencyOpenApiDocument', () => {
  @Controller('orders')
  @UseInterceptors(IdempotencyInterceptor)
  class OrdersController {
    @Post()
    create() {
      return { id: '1' }
    }

    @Patch(':id')
    update(@Param('id') id: string) {
      return { id }
    }

    @Get(':id')
    find(@Param('id') id: string) {
      return { id }
    }
  }

  @Controller('payments')
  class PaymentsController {
    @Post()
    @UseInterceptors(IdempotencyInterceptor)
    pay() {
      return {}
    }

    @Post('refunds')
    refund() {
      return {}
    }
  }

  @Controller('webhooks')
  class WebhooksController {
    @Post()
    receive() {
      return {}
    }
  }

  // The same routes, with no interceptor bound to any (to bind one app-wide).
  @Controller('orders')
  class PlainOrdersController {
    @Post()
    create() {
      return { id: '1' }
    }

    @Patch(':id')
    update(@Param('id') id: string) {
      return { id }
    }
  }

  @Controller('webhooks')
  class PlainWebhooksController {
    @Post()
    receive() {
      return {}
    }

    @Get()
    list() {
      return []
    }
  }

  const options = { store: memoryStore(), scope }

  @Module({ imports: [IdempotencyModule.forRoot(options)], controllers: [OrdersController, PaymentsController, WebhooksController] })
  class AppModule {}

  @Module({ controllers: [PlainOrdersController, PlainWebhooksController] })
  class PlainModule {}

  let app: INestApplication | undefined
  afterEach(async () => {
    await app?.close()
    app = undefined
  })

  const config = new DocumentBuilder().setTitle('Shop').setVersion('1').build()

  it('describes the routes the interceptor is bound to (controller or method), and no other; the document is valid and the app agrees', async () => {
    app = await NestFactory.create(AppModule, { logger: false, abortOnError: false })
    const document = idempotencyOpenApiDocument(app, () => SwaggerModule.createDocument(app!, config), options) as Record<string, any>
    await expectValidOpenApi(document)
    expectDescribed(document, ['POST /orders', 'PATCH /orders/{id}', 'POST /payments'])
    expect(JSON.stringify(document)).not.toContain('x-idem-protected')
    // The mark was only there while the document was made.
    expect(JSON.stringify(SwaggerModule.createDocument(app, config))).not.toContain('x-idem-protected')
    await app.listen(0, '127.0.0.1')
    const url = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`
    expect((await post(`${url}/payments`)).status).toBe(400)
    expect((await post(`${url}/payments/refunds`)).status).toBe(201)
    expect((await post(`${url}/orders`, { 'idempotency-key': '"k-1"' })).status).toBe(201)
  })

  it('an app-wide interceptor protects every POST and PATCH', async () => {
    app = await NestFactory.create(PlainModule, { logger: false, abortOnError: false })
    app.useGlobalInterceptors(new IdempotencyInterceptor(options))
    const document = idempotencyOpenApiDocument(app, () => SwaggerModule.createDocument(app!, config), options) as Record<string, any>
    await expectValidOpenApi(document)
    expectDescribed(document, ['POST /orders', 'PATCH /orders/{id}', 'POST /webhooks'])
  })

  it('no interceptor anywhere: nothing is described', async () => {
    app = await NestFactory.create(PlainModule, { logger: false, abortOnError: false })
    const document = idempotencyOpenApiDocument(app, () => SwaggerModule.createDocument(app!, config), options) as Record<string, any>
    expect(describedOperations(document)).toEqual([])
  })
})

describe('@hono/zod-openapi: idempotencyWithOpenApi', () => {
  const Order = z.object({ id: z.string() }).openapi('Order')
  const json = (schema: z.ZodType) => ({ content: { 'application/json': { schema } } })

  function app() {
    const hono = new OpenAPIHono()
    const idem = honoWithOpenApi(hono, { store: memoryStore(), scope, required: false })
    hono.openapi(
      idem.route(createRoute({ method: 'post', path: '/orders', request: { body: json(z.object({ item: z.string() })) }, responses: { 201: { description: 'Created', ...json(Order) } } })),
      (c) => c.json({ id: '1' }, 201),
    )
    hono.openapi(
      idem.route(createRoute({ method: 'patch', path: '/orders/{id}', request: { params: z.object({ id: z.string() }) }, responses: { 200: { description: 'Updated', ...json(Order) } } })),
      (c) => c.json({ id: c.req.valid('param').id }, 200),
    )
    hono.openapi(createRoute({ method: 'get', path: '/orders/{id}', request: { params: z.object({ id: z.string() }) }, responses: { 200: { description: 'The order', ...json(Order) } } }), (c) =>
      c.json({ id: c.req.valid('param').id }, 200),
    )
    hono.openapi(createRoute({ method: 'post', path: '/webhooks', responses: { 204: { description: 'Received' } } }), (c) => c.body(null, 204))
    return { hono, idem }
  }

  it('describes the routes given to route(), and no other; the document is valid and the app agrees', async () => {
    const { hono } = app()
    const document = hono.getOpenAPI31Document({ openapi: '3.1.0', info: { title: 'Orders', version: '1' } }) as Record<string, any>
    await expectValidOpenApi(document)
    expectDescribed(document, ['POST /orders', 'PATCH /orders/{id}'], { required: false })
    // required: false documents no missing-key problem.
    expect(document.components.schemas.Problem.properties.code.enum).not.toContain('missing-key')
    const first = await hono.request('/orders', { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': '"k-1"' }, body: '{"item":"a"}' })
    expect(first.status).toBe(201)
    const again = await hono.request('/orders', { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': '"k-1"' }, body: '{"item":"a"}' })
    expect(again.headers.get('idempotent-replayed')).toBe('true')
    const bad = await hono.request('/orders', { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': 'a,b' }, body: '{"item":"a"}' })
    expect(bad.status).toBe(400)
    expect((await hono.request('/webhooks', { method: 'POST', headers: { 'idempotency-key': 'a,b' } })).status).toBe(204)
  })

  it('refuses a route the options would not protect', () => {
    const { idem } = app()
    expect(() => idem.route(createRoute({ method: 'get', path: '/orders', responses: { 200: { description: 'Orders' } } }))).toThrow(InvalidOptionError)
    const hono = new OpenAPIHono()
    const listed = honoWithOpenApi(hono, { store: memoryStore(), scope, routes: ['/orders/*'] })
    expect(() => listed.route(createRoute({ method: 'post', path: '/webhooks', responses: { 204: { description: 'Received' } } }))).toThrow(/does not reach \/webhooks/)
    // route() keeps the route's type (for app.openapi's inference); its parameters are idem's now.
    const notes = listed.route(createRoute({ method: 'post', path: '/orders/{id}/notes', responses: { 204: { description: 'Added' } } })) as unknown as { parameters: unknown[] }
    expect(notes.parameters).toHaveLength(1)
  })
})

describe('Koa: idempotencyOpenApi and idempotencyPolicy from the options the middleware is given', () => {
  // The app's own document, as a Koa team writes it (Koa generates none).
  const document = {
    openapi: '3.1.0',
    info: { title: 'Orders', version: '1' },
    paths: {
      '/orders': { post: { operationId: 'createOrder', responses: { '201': { description: 'Created' } } } },
      '/orders/{id}': {
        get: { parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }], responses: { '200': { description: 'The order' } } },
        patch: { parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }], responses: { '200': { description: 'Updated' } } },
      },
      '/webhooks': { post: { responses: { '204': { description: 'Received' } } } },
    },
  }
  const options: IdempotencyOptions<unknown, Context> = { store: memoryStore(), scope: (ctx) => ctx.get('authorization') || 'anonymous', routes: ['/orders/*'] }

  it('describes exactly the operations the middleware protects; the document is valid and the running app agrees', async () => {
    const described = idempotencyOpenApi(document, options) as Record<string, any>
    await expectValidOpenApi(described)
    expectDescribed(described, ['POST /orders', 'PATCH /orders/{id}'])
    const app = new Koa()
    app.use(koaIdempotency(options))
    app.use((ctx) => void (ctx.status = ctx.method === 'POST' ? (ctx.path === '/webhooks' ? 204 : 201) : 200))
    const server = http.createServer(app.callback())
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
      const send = (method: string, path: string) => fetch(`${url}${path}`, { method, headers: { 'content-type': 'application/json' }, body: method === 'GET' ? null : '{}' })
      expect((await send('POST', '/orders')).status).toBe(400)
      expect((await send('PATCH', '/orders/7')).status).toBe(400)
      expect((await send('GET', '/orders/7')).status).toBe(200)
      expect((await send('POST', '/webhooks')).status).toBe(204)
    } finally {
      server.closeAllConnections()
      server.close()
    }
  })

  it('the policy page states the same: the protected paths and methods', () => {
    const policy = JSON.parse(idempotencyPolicy(options, { format: 'json' })) as IdempotencyPolicyDocument
    expect(policy.paths).toEqual(['/orders/*'])
    expect(policy.methods).toEqual(['POST', 'PATCH'])
  })
})
