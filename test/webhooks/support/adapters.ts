// Every adapter the webhook receiver has, each a real server on loopback: Fetch (on
// @hono/node-server), Hono, Express 5 and 4, Koa 3 and 2, Fastify, NestJS on Express and
// on Fastify, mounted alone or after a body parser that keeps the raw bytes or drops them;
// and Lambda's behind API Gateway (REST and HTTP APIs), a Function URL and an ALB (lambda.ts).
import type { Server } from 'node:http'
import { Controller, Inject, Module, Post, Req, Res, type DynamicModule, type INestApplication } from '@nestjs/common'
import { NestFactory } from '@nestjs/core'
import { ExpressAdapter } from '@nestjs/platform-express'
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify'
import express from 'express'
import express4 from 'express4'
import fastify from 'fastify'
import { Hono } from 'hono'
import Koa, { type Middleware } from 'koa'
import koa2 from 'koa2'
import * as onExpress from '../../../src/http/adapters/express/index.js'
import * as onFastify from '../../../src/http/adapters/fastify/index.js'
import { webhookReceiver as onFetch } from '../../../src/http/fetch/index.js'
import * as onHono from '../../../src/http/adapters/hono/index.js'
import * as onKoa from '../../../src/http/adapters/koa/index.js'
import * as onNest from '../../../src/http/adapters/nestjs/index.js'
import type { WebhookReceiverOptions } from '../../../src/http/webhooks/receiver.js'
import type { PgClient } from '../../../src/stores/postgres/driver/types.js'
import { lambdaAdapters } from './lambda.js'
import { closing, listening, nodeServe, type Running } from './serving.js'

export type { Running } from './serving.js'


/** How the receivers were mounted: alone, after a body parser that keeps the raw bytes, or after one that does not. */
export type Mount = 'alone' | 'parser-keeps-bytes' | 'parser-drops-bytes'

/** One receiver to mount: its path, its inbox's consumer, and its options for whichever request type the adapter has. */
export interface Mounted {
  readonly path: string
  readonly consumer: string
  options<R>(): WebhookReceiverOptions<PgClient, R>
}
export type Receivers = readonly Mounted[]

export interface Adapter {
  readonly name: string
  /** Mounts that are not "alone" which this framework has (Fetch has no body parsers). */
  readonly mounts: readonly Mount[]
  start(receivers: Receivers, mount: Mount): Promise<Running>
}

function expressAdapter(name: string, framework: typeof express): Adapter {
  return {
    name,
    mounts: ['parser-keeps-bytes', 'parser-drops-bytes'],
    async start(receivers, mount) {
      const app = framework()
      if (mount === 'parser-keeps-bytes') app.use(framework.json({ verify: (req, _res, buf) => void Object.assign(req, { rawBody: buf }) }))
      if (mount === 'parser-drops-bytes') app.use(framework.json())
      for (const { path, options } of receivers) app.post(path, onExpress.webhookReceiver(options()))
      // Express's error handling: the InvalidOptionError of a body whose bytes are gone.
      app.use((error: Error, _req: express.Request, res: express.Response, _next: express.NextFunction) => void res.status(500).json({ error: error.message }))
      const server = await new Promise<Server>((resolve) => {
        const started: Server = app.listen(0, '127.0.0.1', () => resolve(started))
      })
      return { base: listening(server), close: closing(server) }
    },
  }
}

/**
 * A body parser as Koa apps mount them: `@koa/bodyparser` keeps the text it parsed on
 * `ctx.request.rawBody` (`keepsText`); koa-body keeps only what it parsed.
 */
function koaBodyParser(keepsText: boolean): Middleware {
  return async (ctx, next) => {
    const chunks: Buffer[] = []
    for await (const chunk of ctx.req) chunks.push(chunk as Buffer)
    const text = Buffer.concat(chunks).toString('utf8')
    let body: unknown = text
    if (ctx.is('json')) body = JSON.parse(text)
    Object.assign(ctx.request, { body }, keepsText ? { rawBody: text } : {})
    await next()
  }
}

function koaAdapter(name: string, Framework: typeof Koa): Adapter {
  return {
    name,
    mounts: ['parser-keeps-bytes', 'parser-drops-bytes'],
    async start(receivers, mount) {
      const app = new Framework()
      // Koa's error handling: the InvalidOptionError of a body whose bytes are gone.
      app.use(async (ctx, next) => {
        try {
          await next()
        } catch (error) {
          ctx.status = 500
          ctx.body = { error: (error as Error).message }
        }
      })
      if (mount !== 'alone') app.use(koaBodyParser(mount === 'parser-keeps-bytes'))
      const routes = new Map(receivers.map(({ path, options }) => [path, onKoa.webhookReceiver(options())]))
      app.use((ctx, next) => (routes.get(ctx.path) ?? ((_, pass) => pass()))(ctx, next))
      const server = await new Promise<Server>((resolve) => {
        const started: Server = app.listen(0, '127.0.0.1', () => resolve(started))
      })
      return { base: listening(server), close: closing(server) }
    },
  }
}

const RECEIVERS = 'receivers'
@Controller('webhooks')
class WebhooksController {
  private readonly receive: Map<string, (req: onNest.NestRequest, res: unknown) => Promise<void>>
  constructor(@Inject(RECEIVERS) receivers: Receivers) {
    this.receive = new Map(receivers.map(({ path, options }) => [path, onNest.webhookReceiver(options())]))
  }
  @Post(':provider')
  webhook(@Req() req: onNest.NestRequest, @Res() res: unknown) {
    return this.receive.get(req.url.split('?')[0]!)!(req, res)
  }
}
@Module({})
class WebhooksModule {
  static with(receivers: Receivers): DynamicModule {
    return { module: WebhooksModule, controllers: [WebhooksController], providers: [{ provide: RECEIVERS, useValue: receivers }] }
  }
}

function nestAdapter(platform: 'express' | 'fastify'): Adapter {
  return {
    name: `NestJS (${platform})`,
    // Nest's default body parser is always first: rawBody keeps the bytes, or not.
    mounts: ['parser-keeps-bytes', 'parser-drops-bytes'],
    async start(receivers, mount) {
      const options = { rawBody: mount !== 'parser-drops-bytes', logger: false as const }
      let app: INestApplication
      if (platform === 'express') app = await NestFactory.create(WebhooksModule.with(receivers), new ExpressAdapter(), options)
      else {
        const onFastifyPlatform = await NestFactory.create<NestFastifyApplication>(WebhooksModule.with(receivers), new FastifyAdapter(), options)
        // Nest on Fastify keeps rawBody for JSON and forms; registering a type replaces those defaults, so JSON is named again.
        if (options.rawBody) onFastifyPlatform.useBodyParser(['application/json', 'text/plain'])
        app = onFastifyPlatform
      }
      await app.listen(0, '127.0.0.1')
      return { base: listening(app.getHttpServer() as Server), close: () => app.close() }
    },
  }
}

export const adapters: readonly Adapter[] = [
  {
    name: 'Fetch',
    mounts: [],
    start(receivers) {
      const routes = new Map(receivers.map(({ path, options }) => [path, onFetch(options())]))
      return nodeServe((request) => routes.get(new URL(request.url).pathname)!(request))
    },
  },
  {
    name: 'Hono',
    mounts: ['parser-keeps-bytes', 'parser-drops-bytes'],
    start(receivers, mount) {
      const app = new Hono()
      // An earlier middleware that reads the body: as bytes (kept in Hono's cache), or as JSON.
      if (mount === 'parser-keeps-bytes') app.use(async (c, next) => void (await c.req.arrayBuffer(), await next()))
      if (mount === 'parser-drops-bytes') app.use(async (c, next) => void (await c.req.json().catch(() => undefined), await next()))
      for (const { path, options } of receivers) app.post(path, onHono.webhookReceiver(options()))
      app.onError((error, c) => c.json({ error: error.message }, 500))
      return nodeServe(app.fetch)
    },
  },
  expressAdapter('Express 5', express),
  expressAdapter('Express 4', express4 as unknown as typeof express),
  koaAdapter('Koa 3', Koa),
  koaAdapter('Koa 2', koa2),
  {
    name: 'Fastify',
    mounts: ['parser-keeps-bytes', 'parser-drops-bytes'],
    async start(receivers, mount) {
      const app = fastify()
      await app.register(async (webhooks) => {
        if (mount !== 'parser-drops-bytes') {
          webhooks.removeAllContentTypeParsers()
          webhooks.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body))
        }
        for (const { path, options } of receivers) webhooks.post(path, onFastify.webhookReceiver(options()))
      })
      app.setErrorHandler((error, _request, reply) => void reply.code(500).send({ error: (error as Error).message }))
      await app.listen({ port: 0, host: '127.0.0.1' })
      return { base: listening(app.server), close: () => app.close() }
    },
  },
  nestAdapter('express'),
  nestAdapter('fastify'),
  ...lambdaAdapters,
]

