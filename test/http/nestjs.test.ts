// What only the NestJS adapter does (the conformance table covers the rest, on Nest 10
// and 11, for routes that return their value and routes that answer through @Res()): an
// exception thrown by the route rolls back and its filter's answer goes out unstored;
// every way a route can answer (a value, a promise, an Observable, @Res() with
// passthrough, @Res() written at once or later) gets idem's problems and replays; headers
// set before the route stay on replays; without rawBody the parsed body is fingerprinted,
// however deep; forRootAsync and a standalone interceptor work; other contexts pass through.
import { Body, Controller, Header, Inject, Module, NotFoundException, Post, Res, UseInterceptors, type DynamicModule, type INestApplication } from '@nestjs/common'
import { NestFactory } from '@nestjs/core'
import { ExpressAdapter } from '@nestjs/platform-express'
import { FastifyAdapter } from '@nestjs/platform-fastify'
import type { AddressInfo } from 'node:net'
import { delay, of } from 'rxjs'
import { afterEach, describe, expect, it } from 'vitest'
import { idempotency } from '../../src/http/handler.js'
import { Idem, IdempotencyInterceptor, IdempotencyModule, type IdempotencyContext } from '../../src/http/adapters/nestjs/index.js'
import { memoryStore } from '../../src/stores/memory/index.js'
import { expectProblem } from './support/case-kit.js'
import { httpCall, type Call } from './support/frontends.js'

const RUNS = 'runs'
type Runs = Record<string, number>
const scope = () => 'acct'

// Express's response or Fastify's reply, as `@Res()` gives it.
type Reply = { status?(code: number): unknown; code?(code: number): unknown; send(body: unknown): unknown }
function status(res: Reply, code: number): void {
  if (typeof res.code === 'function') res.code(code)
  else res.status!(code)
}
function send(res: Reply, code: number, body: unknown): void {
  status(res, code)
  res.send(body)
}

@Controller()
class TestController {
  constructor(@Inject(RUNS) private readonly runs: Runs) {}

  private count(name: string): number {
    return (this.runs[name] = (this.runs[name] ?? 0) + 1)
  }

  @Post('missing')
  missing(@Idem() idem: IdempotencyContext<unknown> | undefined) {
    this.count('missing')
    expect(idem).toBeDefined()
    throw new NotFoundException('no such order')
  }

  // Sends its own response: Nest writes nothing after it.
  @Post('own')
  own(@Res() res: { status(code: number): { json(body: unknown): void } } & { code?: unknown; send?: unknown }) {
    const run = this.count('own')
    const reply = res as unknown as { code?(c: number): { send(b: unknown): void }; status(c: number): { json(b: unknown): void } }
    if (typeof reply.code === 'function') reply.code(202).send({ run })
    else reply.status(202).json({ run })
  }

  // Answers after the handler has returned: Nest has nothing to wait for.
  @Post('later')
  later(@Res() res: Reply) {
    const run = this.count('later')
    setImmediate(() => send(res, 202, { run }))
  }

  @Post('passthrough')
  passthrough(@Res({ passthrough: true }) res: Reply) {
    status(res, 202)
    return { run: this.count('passthrough') }
  }

  @Post('promise')
  async promise() {
    await Promise.resolve()
    return { run: this.count('promise') }
  }

  @Post('observable')
  observable() {
    return of({ run: this.count('observable') }).pipe(delay(1))
  }

  @Post('count')
  countOnly() {
    return { run: this.count('count') }
  }

  @Post('headers')
  @Header('x-request-id', 'r-1')
  headers(@Body() body: unknown) {
    return { run: this.count('headers'), body }
  }
}

@Module({})
class TestModule {
  static with(runs: Runs, idempotency: DynamicModule, controller = TestController): DynamicModule {
    return {
      module: TestModule,
      imports: [idempotency],
      controllers: [controller],
      providers: [{ provide: RUNS, useValue: runs }],
    }
  }
}

@Controller()
@UseInterceptors(IdempotencyInterceptor)
class ProtectedController extends TestController {}

const apps: INestApplication[] = []
afterEach(async () => {
  for (const app of apps.splice(0)) await app.close()
})

async function start(platform: 'express' | 'fastify', module: DynamicModule, rawBody = true, before?: (app: INestApplication) => void): Promise<(call: Call) => Promise<Response>> {
  const app = await NestFactory.create(module, platform === 'express' ? new ExpressAdapter() : new FastifyAdapter(), { rawBody, logger: false })
  apps.push(app)
  before?.(app)
  await app.listen(0, '127.0.0.1')
  const { port } = (app.getHttpServer() as { address(): AddressInfo }).address()
  return (call) => httpCall(port, call)
}

const forRoot = () => IdempotencyModule.forRoot({ store: memoryStore(), scope })

// A body read to its end before the interceptor, with nothing of it kept (no rawBody, no body).
const DRAINED = 'application/x-drained'
function drainBodies(platform: 'express' | 'fastify'): (app: INestApplication) => void {
  return (app) => {
    if (platform === 'express') {
      app.use((req: NodeJS.ReadableStream & { headers: Record<string, unknown> }, _res: unknown, next: () => void) => {
        if (req.headers['content-type'] !== DRAINED) return next()
        req.on('end', next).resume()
      })
    } else {
      const fastify = app.getHttpAdapter().getInstance() as { addContentTypeParser(type: string, parse: (request: unknown, payload: NodeJS.ReadableStream, done: (error: null, body: undefined) => void) => void): void }
      fastify.addContentTypeParser(DRAINED, (_request, payload, done) => {
        payload.on('end', () => done(null, undefined)).resume()
      })
    }
  }
}

for (const platform of ['express', 'fastify'] as const) {
  describe(`NestJS 11 on ${platform}`, () => {
    it('a thrown HttpException rolls back: its 404 goes out unstored and the retry runs the route again', async () => {
      const runs: Runs = {}
      const send = await start(platform, TestModule.with(runs, forRoot(), ProtectedController))
      const call: Call = { path: '/missing', key: '"m-1"', body: '' }
      const first = await send(call)
      expect(first.status).toBe(404)
      expect(await first.json()).toMatchObject({ message: 'no such order' })
      const retry = await send(call)
      expect(retry.status).toBe(404)
      expect(retry.headers.get('idempotent-replayed')).toBeNull()
      expect(runs.missing).toBe(2)
    })

    it('a handler that sends its own response (@Res()) is stored and replayed', async () => {
      const runs: Runs = {}
      const send = await start(platform, TestModule.with(runs, forRoot(), ProtectedController))
      const call: Call = { path: '/own', key: '"o-1"', body: '' }
      expect((await send(call)).status).toBe(202)
      const replay = await send(call)
      expect(replay.status).toBe(202)
      expect(replay.headers.get('idempotent-replayed')).toBe('true')
      expect(await replay.json()).toEqual({ run: 1 })
      expect(runs.own).toBe(1)
    })

    it('every way a route answers (value, promise, Observable, @Res() passthrough, @Res() at once or later) gets the problems of every adapter and replays', async () => {
      const runs: Runs = {}
      const send = await start(platform, TestModule.with(runs, forRoot(), ProtectedController))
      // What idem/fetch answers, without Nest: the same problems, byte for byte.
      const fetch = idempotency({ store: memoryStore(), scope })
      const bare = async (key: string | undefined, body: string): Promise<string> => {
        const headers = new Headers({ 'content-type': 'application/json' })
        if (key !== undefined) headers.set('idempotency-key', key)
        const answer = await fetch(new Request('http://localhost/x', { method: 'POST', headers, body }), async () => new Response('{}', { status: 201 }))
        return answer.text()
      }
      const missing = await bare(undefined, '{}')
      for (const [route, status] of [['count', 201], ['promise', 201], ['observable', 201], ['passthrough', 202], ['own', 202], ['later', 202]] as const) {
        const call: Call = { path: `/${route}`, key: `"${route}"`, contentType: 'application/json', body: '{"a":1}' }
        const without = await send({ ...call, key: undefined })
        await expectProblem(without.clone(), 400, 'missing-key')
        expect(await without.text(), route).toBe(missing)
        const first = await send(call)
        expect(first.status, route).toBe(status)
        const replay = await send(call)
        expect(replay.status, route).toBe(status)
        expect(replay.headers.get('idempotent-replayed'), route).toBe('true')
        expect(await replay.text(), route).toBe(await first.text())
        const reused = await send({ ...call, body: '{"a":2}' })
        await expectProblem(reused.clone(), 422, 'fingerprint-mismatch')
        await bare(call.key as string, '{"a":1}')
        expect(await reused.text(), route).toBe(await bare(call.key as string, '{"a":2}'))
        expect(runs[route], route).toBe(1)
      }
    })

    it('a body read before the interceptor and kept nowhere is a 500 invalid-option problem on every kind of route, and nothing runs', async () => {
      const runs: Runs = {}
      const send = await start(platform, TestModule.with(runs, forRoot(), ProtectedController), false, drainBodies(platform))
      for (const route of ['count', 'own']) {
        const answer = await send({ path: `/${route}`, key: `"d-${route}"`, contentType: DRAINED, body: 'bytes' })
        const problem = await expectProblem(answer, 500, 'invalid-option')
        expect(problem.detail, route).toBe('The idempotency middleware on this server is misconfigured.')
        expect(runs[route], route).toBeUndefined()
      }
    })

    it('headers set before the route (@Header) stay on the replay and on problems; nothing Nest wrote for the replay leaks', async () => {
      const runs: Runs = {}
      const send = await start(platform, TestModule.with(runs, forRoot(), ProtectedController))
      const call: Call = { path: '/headers', key: '"h-1"', contentType: 'application/json', body: '{"a":1}' }
      const first = await send(call)
      const replay = await send(call)
      expect(replay.headers.get('x-request-id')).toBe('r-1')
      expect(replay.headers.get('idempotent-replayed')).toBe('true')
      expect(await replay.text()).toBe(await first.text())
      const problem = await send({ ...call, key: undefined })
      expect(problem.status).toBe(400)
      expect(problem.headers.get('content-type')).toBe('application/problem+json')
      expect(problem.headers.get('x-request-id')).toBe('r-1')
    })

    it('without rawBody the parsed body is fingerprinted: key order does not count, values do, and nesting past the stack is no 5xx', async () => {
      const runs: Runs = {}
      const send = await start(platform, TestModule.with(runs, forRoot(), ProtectedController), false)
      const json = 'application/json'
      expect((await send({ path: '/headers', key: '"p-1"', contentType: json, body: '{"a":1,"b":2}' })).status).toBe(201)
      expect((await send({ path: '/headers', key: '"p-1"', contentType: json, body: '{"b":2,"a":1}' })).headers.get('idempotent-replayed')).toBe('true')
      expect((await send({ path: '/headers', key: '"p-1"', contentType: json, body: '{"a":1,"b":3}' })).status).toBe(422)
      const deep = `${'['.repeat(20_000)}${']'.repeat(20_000)}`
      const answer = await send({ path: '/count', key: '"p-2"', contentType: json, body: deep })
      expect(answer.status).toBeLessThan(500)
    })

    it('forRootAsync builds the options from injected providers, and IdempotencyInterceptor works bound app-wide', async () => {
      const runs: Runs = {}
      const idempotency = IdempotencyModule.forRootAsync({
        inject: [RUNS],
        useFactory: (injected: Runs) => {
          // The factory got the provider it asked for (a scope that throws would answer 500).
          expect(injected).toBe(runs)
          return { store: memoryStore(), scope }
        },
      })
      const module = TestModule.with(runs, idempotency)
      // forRootAsync's factory injects RUNS: provide it to the module that needs it.
      const send = await start(platform, {
        ...module,
        imports: [{ ...idempotency, providers: [...(idempotency.providers ?? []), { provide: RUNS, useValue: runs }] }],
        providers: [...(module.providers ?? []), { provide: 'APP_INTERCEPTOR', useExisting: IdempotencyInterceptor }],
      })
      const call: Call = { path: '/headers', key: '"a-1"', body: '' }
      expect((await send(call)).status).toBe(201)
      expect((await send(call)).headers.get('idempotent-replayed')).toBe('true')
      expect(runs.headers).toBe(1)
    })
  })
}

describe('IdempotencyInterceptor without the module', () => {
  it('is made from options, validated at once', () => {
    expect(() => new IdempotencyInterceptor({ store: memoryStore(), scope, methods: [] })).toThrow(/option "methods"/)
  })

  it('passes requests that are not HTTP straight to the handler', async () => {
    const interceptor = new IdempotencyInterceptor({ store: memoryStore(), scope })
    const context = { getType: () => 'rpc' } as never
    const values: unknown[] = []
    interceptor.intercept(context, { handle: () => of('handled') }).subscribe((value) => values.push(value))
    expect(values).toEqual(['handled'])
  })
})
