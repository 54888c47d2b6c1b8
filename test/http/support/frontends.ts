import { All, Controller, Inject, Module, Req, Res, UseInterceptors, type DynamicModule, type INestApplication } from '@nestjs/common'
import { APP_INTERCEPTOR, NestFactory } from '@nestjs/core'
import { ExpressAdapter, type NestExpressApplication } from '@nestjs/platform-express'
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify'
import express from 'express'
import express4 from 'express4'
import Fastify, { type FastifyRequest } from 'fastify'
import { Hono, type Context } from 'hono'
import Koa, { type Context as KoaContext } from 'koa'
import koa2 from 'koa2'
import http, { type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import { idempotency as expressIdempotency } from '../../../src/http/adapters/express/index.js'
import { idempotency as fastifyIdempotency } from '../../../src/http/adapters/fastify/index.js'
import { idempotency as fetchIdempotency } from '../../../src/http/fetch/index.js'
import { idempotency as honoIdempotency, type IdemVariables } from '../../../src/http/adapters/hono/index.js'
import { idempotency as koaIdempotency, type IdemState } from '../../../src/http/adapters/koa/index.js'
import { Idem, IdempotencyInterceptor, IdempotencyModule, type NestRequest } from '../../../src/http/adapters/nestjs/index.js'
import type { IdempotencyContext, IdempotencyOptions } from '../../../src/http/options.js'
import { runRoute, tenantOf, type AppState, type RouteOutput } from './app.js'
import type { Backend } from './backends.js'
import { decodeRequestBodies, nestCannot } from './platform-decoding.js'
import { lambdaAlbFrontEnd, lambdaUrlFrontEnd, lambdaV1FrontEnd, lambdaV2FrontEnd } from './lambda-frontends.js'

/** One request, described independently of how a front end is reached. */
export interface Call {
  method?: string
  path: string
  /** The Idempotency-Key value; a list sends one header field per item. */
  key?: string | string[]
  /** Sent as `Authorization: Bearer <tenant>`; the scope is derived from it. */
  tenant?: string
  contentType?: string
  /** Sent as `Content-Encoding`: what `body` (its bytes, then) is encoded with. */
  contentEncoding?: string
  /**
   * A `FormData` is encoded as fetch encodes it, afresh on every send: a new multipart
   * boundary each time, as a client that sends the same form again does.
   */
  body?: string | Uint8Array | FormData
  /** Send the (text) body as a stream (chunked, no Content-Length). */
  stream?: boolean
}

export interface Client {
  send(call: Call): Promise<Response>
  /** The listening port, for front ends on a real server. */
  port?: number
  close(): Promise<void>
}

/** The middleware options a case may set; the store (or engine) comes from the backend. */
export type AppOptions = Omit<IdempotencyOptions<unknown>, 'store' | 'idem'> & { storeDown?: boolean }

export interface FrontEnd {
  name: 'fetch' | 'hono' | 'express' | 'express4' | 'koa' | 'koa2' | 'fastify' | `nest${NestMajor}-${NestPlatform}` | `nest${NestMajor}-${NestPlatform}-res` | `lambda-${'v1' | 'v2' | 'url' | 'alb'}`
  start(backend: Backend, options: AppOptions, state: AppState): Promise<Client>
  /** Cases this front end cannot pass, by name, each with why (what its platform does not carry). */
  cannot?: Readonly<Record<string, string>>
}

function middlewareOptions<Native>(
  backend: Backend,
  { storeDown, ...options }: AppOptions,
  state: AppState,
  principal: (request: Native) => string,
): IdempotencyOptions<unknown, Native> {
  return {
    ...backend.protection(storeDown ? 'down' : undefined),
    scope: (request) => {
      state.scopeCalls++
      state.onScope?.()
      return principal(request)
    },
    ...(options as IdempotencyOptions<unknown, Native>),
  }
}

function toWebResponse(out: RouteOutput): Response {
  const headers = new Headers()
  for (const [name, value] of out.headers) headers.append(name, value)
  return new Response(out.body, { status: out.status, headers })
}

function toWebRequest(call: Call): Request {
  const headers = new Headers()
  for (const value of [call.key ?? []].flat()) headers.append('idempotency-key', value)
  if (call.tenant !== undefined) headers.set('authorization', `Bearer ${call.tenant}`)
  if (call.contentType !== undefined) headers.set('content-type', call.contentType)
  if (call.contentEncoding !== undefined) headers.set('content-encoding', call.contentEncoding)
  const method = call.method ?? 'POST'
  const init: RequestInit & { duplex?: 'half' } = { method, headers }
  if (typeof call.body === 'string' && call.stream) {
    init.body = streamOf(call.body)
    init.duplex = 'half'
  } else if (call.body !== undefined) init.body = call.body
  return new Request(`http://test.local${call.path}`, init)
}

function streamOf(text: string): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text)
  const half = Math.floor(bytes.length / 2)
  return new ReadableStream({
    start(controller) {
      controller.enqueue(bytes.slice(0, half))
      controller.enqueue(bytes.slice(half))
      controller.close()
    },
  })
}

/** The neutral handler called directly, as a fetch-style runtime would (a throw becomes a 500). */
export const fetchFrontEnd: FrontEnd = {
  name: 'fetch',
  async start(backend, options, state) {
    const handle = fetchIdempotency(
      middlewareOptions<Request>(backend, options, state, (request) => tenantOf(request.headers.get('authorization'))),
    )
    return {
      async send(call) {
        const request = toWebRequest(call)
        try {
          return await handle(request, async (forwarded, idem) =>
            toWebResponse(await runRoute(backend, state, { method: forwarded.method, path: new URL(forwarded.url).pathname, body: await forwarded.text(), idem })),
          )
        } catch {
          return new Response('Internal Server Error', { status: 500 })
        }
      },
      close: async () => {},
    }
  },
}

/** Hono 4, reached in-process with `app.request`. */
export const honoFrontEnd: FrontEnd = {
  name: 'hono',
  async start(backend, options, state) {
    const app = new Hono<{ Variables: IdemVariables<unknown> }>()
    app.use(honoIdempotency(middlewareOptions<Context>(backend, options, state, (c) => tenantOf(c.req.header('authorization')))))
    // Hono's default error handler logs every thrown error; the tests throw on purpose.
    app.onError((_error, c) => c.text('Internal Server Error', 500))
    app.all('*', async (c) =>
      toWebResponse(await runRoute(backend, state, { method: c.req.method, path: c.req.path, body: await c.req.text(), idem: c.get('idem') })),
    )
    return {
      send: async (call) => app.request(toWebRequest(call)),
      close: async () => {},
    }
  },
}

/**
 * Express on a real listening server; `express.text()` after the middleware reads the
 * body. The same app on Express 5 and on Express 4 (installed as `express4`).
 */
function expressOn(name: 'express' | 'express4', framework: typeof express): FrontEnd {
  return {
    name,
    start: (backend, options, state) => startExpress(framework, name === 'express', backend, options, state),
  }
}

/** Express 5. */
export const expressFrontEnd: FrontEnd = expressOn('express', express)
/** Express 4.21, the major most installed Express apps are still on. */
export const express4FrontEnd: FrontEnd = expressOn('express4', express4 as unknown as typeof express)

async function startExpress(framework: typeof express, catchesRejections: boolean, backend: Backend, options: AppOptions, state: AppState): Promise<Client> {
  {
    const app = framework()
    app.use(expressIdempotency(middlewareOptions<express.Request>(backend, options, state, (req) => tenantOf(req.get('authorization')))))
    app.use(framework.text({ type: () => true, limit: '1mb' }))
    app.use((req, res, next) => {
      const route = runRoute(backend, state, { method: req.method, path: req.path, body: typeof req.body === 'string' ? req.body : '', idem: req.idem }).then((out) => {
        // Past its deadline idem has answered for the route (503 overran).
        if (res.headersSent) return
        res.status(out.status)
        for (const [name, value] of out.headers) res.append(name, value)
        res.send(out.body)
        if (out.thenThrow !== undefined) throw out.thenThrow
      })
      // Express 5 catches a rejected async handler; Express 4 does not: apps on 4 pass it to next.
      if (catchesRejections) return route
      route.catch(next)
    })
    // Express's default error handler logs every thrown error; the tests throw on purpose.
    app.use((_error: unknown, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
      if (res.headersSent) return
      res.status(500).type('text/plain').send('Internal Server Error')
    })
    const server = http.createServer(app)
    return listen(server)
  }
}

/**
 * Koa on a real listening server; the route reads the body from the request's stream
 * after the middleware, as a body parser there does, and answers with `ctx.status`,
 * `ctx.body` and headers. The same app on Koa 3 and on Koa 2 (installed as `koa2`).
 */
function koaOn(name: 'koa' | 'koa2', Framework: typeof Koa): FrontEnd {
  return {
    name,
    async start(backend, options, state) {
      const app = new Framework<IdemState<unknown>>()
      // Koa's default error handler logs every thrown error; the tests throw on purpose.
      app.silent = true
      app.use(koaIdempotency(middlewareOptions<KoaContext>(backend, options, state, (ctx) => tenantOf(ctx.get('authorization')))))
      app.use(async (ctx) => {
        const out = await runRoute(backend, state, { method: ctx.method, path: ctx.path, body: await textOf(ctx.req), idem: ctx.state.idem })
        if (out.hijack) {
          // Koa's way to take the response over: refused while idem holds the key.
          ctx.respond = false
          ctx.res.writeHead(out.status, headerRecord(out.headers))
          ctx.res.end(out.body)
          return
        }
        ctx.status = out.status
        for (const [name, value] of out.headers) ctx.append(name, value)
        ctx.body = out.body
        if (out.thenThrow !== undefined) throw out.thenThrow
      })
      return listen(http.createServer(app.callback()))
    },
  }
}

async function textOf(stream: AsyncIterable<Buffer>): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of stream) chunks.push(chunk)
  return Buffer.concat(chunks).toString('utf8')
}

/** Koa 3. */
export const koaFrontEnd: FrontEnd = koaOn('koa', Koa)
/** Koa 2.16, which most Koa apps still run. */
export const koa2FrontEnd: FrontEnd = koaOn('koa2', koa2)

/** Fastify 5 on a real listening server; its content-type parser reads the body. */
export const fastifyFrontEnd: FrontEnd = {
  name: 'fastify',
  async start(backend, options, state) {
    const app = Fastify()
    await app.register(fastifyIdempotency(middlewareOptions<FastifyRequest>(backend, options, state, (req) => tenantOf(req.headers.authorization))))
    app.removeAllContentTypeParsers()
    app.addContentTypeParser('*', { parseAs: 'string' }, (_req, body, done) => done(null, body))
    app.all('*', async (request, reply) => {
      const out = await runRoute(backend, state, {
        method: request.method,
        path: request.url.split('?')[0]!,
        body: typeof request.body === 'string' ? request.body : '',
        idem: request.idem ?? undefined,
      })
      if (out.hijack) return answerOnRaw(reply, out)
      reply.code(out.status)
      for (const [name, value] of Object.entries(headerRecord(out.headers))) reply.header(name, value)
      reply.send(out.body)
      if (out.thenThrow !== undefined) throw out.thenThrow
      return reply
    })
    await app.listen({ host: '127.0.0.1', port: 0 })
    const { port } = app.server.address() as AddressInfo
    return { port, send: (call) => httpCall(port, call), close: () => app.close() }
  },
}

/** A route's headers as one record: Set-Cookie a list, every other field one value. */
function headerRecord(headers: ReadonlyArray<[string, string]>): Record<string, string | string[]> {
  const record: Record<string, string | string[]> = {}
  const cookies = headers.filter(([name]) => name === 'set-cookie').map(([, value]) => value)
  for (const [name, value] of headers) if (name !== 'set-cookie') record[name] = value
  if (cookies.length > 0) record['set-cookie'] = cookies
  return record
}

/** Takes Fastify's reply over and writes the route's answer on the Node response itself. */
function answerOnRaw<T extends { hijack(): unknown; raw: http.ServerResponse }>(reply: T, out: RouteOutput): T {
  reply.hijack()
  reply.raw.writeHead(out.status, headerRecord(out.headers))
  reply.raw.end(out.body)
  return reply
}

type NestMajor = 10 | 11
type NestPlatform = 'express' | 'fastify'
/**
 * How the route answers: `returned`, the value it returns (status and headers set on
 * `@Res({ passthrough: true })`), or `res`, writing through `@Res()` itself, so that Nest
 * writes nothing after it.
 */
type NestStyle = 'returned' | 'res'

// What the test controller is given: the backend and the case's state.
const NEST_APP = 'conformance:app'
interface NestApp {
  backend: Backend
  state: AppState
}
// The platform's response, as `@Res()` gives it: Express's or Fastify's.
interface PlatformResponse {
  status?(code: number): unknown
  code?(code: number): unknown
  header(name: string, value: string | string[]): unknown
  send(body: string): unknown
  /** Fastify's. */
  hijack?(): unknown
  raw?: http.ServerResponse
}

const ROUTES = ['orders', 'other', 'slow', 'fail', 'busy', 'gone', 'throw', 'json', 'big', 'answer-then-throw', 'hijack', 'spaced']

/**
 * Runs the shared route for a Nest request and puts its status and headers on the
 * platform's response; returns the body, or nothing when the route answered itself.
 */
async function nestRoute(app: NestApp, req: NestRequest, res: PlatformResponse, idem: IdempotencyContext<unknown> | undefined): Promise<string | undefined> {
  const body = req.rawBody?.toString('utf8') ?? (typeof req.body === 'string' ? req.body : '')
  const path = String(req.originalUrl ?? req.url).split('?')[0]!
  const out = await runRoute(app.backend, app.state, { method: req.method, path, body, idem })
  if (out.hijack) {
    answerOnRaw({ hijack: () => res.hijack!(), raw: res.raw! }, out)
    return undefined
  }
  if (res.status !== undefined) res.status(out.status)
  else res.code!(out.status)
  for (const [name, value] of Object.entries(headerRecord(out.headers))) res.header(name, value)
  if (out.thenThrow === undefined) return out.body
  res.send(out.body)
  throw out.thenThrow
}

/**
 * The routes of every front end, as a Nest controller: the key and transaction come from
 * `@Idem()`, the status and headers go on the platform's response (passthrough), and
 * the returned text is what Nest sends.
 */
@Controller()
class ConformanceController {
  constructor(@Inject(NEST_APP) private readonly app: NestApp) {}

  @All(ROUTES)
  handle(@Req() req: NestRequest, @Res({ passthrough: true }) res: PlatformResponse, @Idem() idem: IdempotencyContext<unknown> | undefined): Promise<string | undefined> {
    return nestRoute(this.app, req, res, idem)
  }
}

/** The same routes answering through `@Res()`: the handler sends the response itself. */
@Controller()
class OwnResponseConformanceController {
  constructor(@Inject(NEST_APP) private readonly app: NestApp) {}

  @All(ROUTES)
  async handle(@Req() req: NestRequest, @Res() res: PlatformResponse, @Idem() idem: IdempotencyContext<unknown> | undefined): Promise<void> {
    const body = await nestRoute(this.app, req, res, idem)
    if (body !== undefined) res.send(body)
  }
}

/** The controllers with the interceptor bound on them, rather than app-wide. */
@Controller()
@UseInterceptors(IdempotencyInterceptor)
class ProtectedConformanceController extends ConformanceController {}
@Controller()
@UseInterceptors(IdempotencyInterceptor)
class ProtectedOwnResponseConformanceController extends OwnResponseConformanceController {}

const CONTROLLERS = {
  returned: { bound: ProtectedConformanceController, appWide: ConformanceController },
  res: { bound: ProtectedOwnResponseConformanceController, appWide: OwnResponseConformanceController },
}

@Module({})
class ConformanceModule {
  /**
   * The app of one case. On Express the interceptor is bound on the controller
   * (`@UseInterceptors`), on Fastify app-wide (`APP_INTERCEPTOR`), so both ways are run.
   */
  static of(app: NestApp, options: AppOptions, platform: NestPlatform, style: NestStyle): DynamicModule {
    const idempotency = IdempotencyModule.forRoot(middlewareOptions<NestRequest>(app.backend, options, app.state, (req) => tenantOf(req.headers.authorization)))
    return {
      module: ConformanceModule,
      imports: [idempotency],
      controllers: [platform === 'express' ? CONTROLLERS[style].bound : CONTROLLERS[style].appWide],
      providers: [{ provide: NEST_APP, useValue: app }, ...(platform === 'fastify' ? [{ provide: APP_INTERCEPTOR, useExisting: IdempotencyInterceptor }] : [])],
    }
  }
}

/**
 * NestJS on a real listening server, with `rawBody: true` (as docs/nestjs.md advises),
 * Nest's own JSON and form parsers and, for every other type, a text parser. `major`
 * names the Nest that `@nestjs/*` resolves to: 11 at the root; the conformance files of
 * Nest 10 map `@nestjs/*` to test/http/nest10's. `style` is how the routes answer.
 */
export function nestFrontEnd(major: NestMajor, platform: NestPlatform, style: NestStyle = 'returned'): FrontEnd {
  return {
    name: `nest${major}-${platform}${style === 'res' ? '-res' : ''}`,
    cannot: nestCannot(major, platform),
    async start(backend, options, state) {
      const module = ConformanceModule.of({ backend, state }, options, platform, style)
      let app: INestApplication
      if (platform === 'express') {
        const nest = await NestFactory.create<NestExpressApplication>(module, new ExpressAdapter(), { rawBody: true, logger: false })
        nest.useBodyParser('json', { limit: '1mb' })
        nest.useBodyParser('urlencoded', { limit: '1mb', extended: true })
        nest.useBodyParser('text', { limit: '1mb', type: () => true })
        app = nest
      } else {
        const nest = await NestFactory.create<NestFastifyApplication>(module, new FastifyAdapter(), { rawBody: true, logger: false })
        decodeRequestBodies(nest.getHttpAdapter().getInstance())
        nest.getHttpAdapter().getInstance().addContentTypeParser('*', { parseAs: 'buffer' }, (request, bytes, done) => {
          ;(request as unknown as { rawBody: Buffer }).rawBody = bytes as Buffer
          done(null, (bytes as Buffer).toString('utf8'))
        })
        app = nest
      }
      await app.listen(0, '127.0.0.1')
      const server = app.getHttpServer() as http.Server
      const { port } = server.address() as AddressInfo
      return {
        port,
        send: (call) => httpCall(port, call),
        async close() {
          server.closeAllConnections()
          await app.close()
        },
      }
    },
  }
}

export const frontEnds: readonly FrontEnd[] = [
  fetchFrontEnd,
  honoFrontEnd,
  expressFrontEnd,
  express4FrontEnd,
  koaFrontEnd,
  koa2FrontEnd,
  fastifyFrontEnd,
  nestFrontEnd(11, 'express'),
  nestFrontEnd(11, 'fastify'),
  nestFrontEnd(11, 'express', 'res'),
  nestFrontEnd(11, 'fastify', 'res'),
  lambdaV1FrontEnd,
  lambdaV2FrontEnd,
  lambdaUrlFrontEnd,
  lambdaAlbFrontEnd,
]

async function listen(server: http.Server): Promise<Client> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    port,
    send: (call) => httpCall(port, call),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

/**
 * One request over a real connection with node:http, which (unlike fetch) can send a
 * header in several fields. The answer is returned as a Web Response.
 */
export async function httpCall(port: number, call: Call, extraHeaders: Record<string, string> = {}): Promise<Response> {
  const headers: Record<string, string | string[]> = { ...extraHeaders }
  if (call.key !== undefined) headers['idempotency-key'] = call.key
  if (call.tenant !== undefined) headers.authorization = `Bearer ${call.tenant}`
  let body: string | Uint8Array | undefined
  if (call.body instanceof FormData) {
    // fetch's own encoder, so the boundary is a fresh one on every send.
    const encoded = new Request('http://encode.test/', { method: 'POST', body: call.body })
    headers['content-type'] = encoded.headers.get('content-type')!
    body = Buffer.from(await encoded.arrayBuffer())
  } else body = call.body
  if (call.contentType !== undefined) headers['content-type'] = call.contentType
  if (call.contentEncoding !== undefined) headers['content-encoding'] = call.contentEncoding
  return new Promise<Response>((resolve, reject) => {
    const request = http.request({ host: '127.0.0.1', port, method: call.method ?? 'POST', path: call.path, headers }, (response) => {
      const chunks: Buffer[] = []
      response.on('data', (chunk: Buffer) => chunks.push(chunk))
      response.on('end', () => resolve(webResponseOf(response.statusCode ?? 0, fromNode(response.headers), Buffer.concat(chunks))))
      response.on('error', reject)
    })
    request.on('error', reject)
    if (body === undefined) request.end()
    else if (call.stream) {
      const bytes = Buffer.from(body)
      const half = Math.floor(bytes.length / 2)
      request.write(bytes.subarray(0, half))
      request.end(bytes.subarray(half))
    } else request.end(body)
  })
}

// A Response refuses a body with a no-body status (204, 304): such an answer's is empty.
function webResponseOf(status: number, headers: Headers, body: Buffer): Response {
  return new Response([101, 103, 204, 205, 304].includes(status) || body.byteLength === 0 ? null : new Uint8Array(body), { status, headers })
}

function fromNode(headers: IncomingHttpHeaders): Headers {
  const result = new Headers()
  for (const [name, value] of Object.entries(headers)) {
    for (const item of [value ?? []].flat()) result.append(name, item)
  }
  return result
}
