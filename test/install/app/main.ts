// The app test/install/fresh-install.test.ts builds in fresh projects from the packed
// tarball, once beside the lowest version of every peer range and once beside the
// highest: a Nest app compiled with the tsconfig Nest's CLI generates (CommonJS for Nest
// 10, nodenext for Nest 11), so every `idem/*` import below is a require() of an ES
// module at run time. It is written as CommonJS TypeScript (`import x = require()` for
// the packages that export a function, as a Nest 10 project without esModuleInterop must)
// so that it compiles under both tsconfigs. Each part uses one peer the way its guide does, against the real
// service, and prints `<peer>@<version> <what it saw>` for the test to check.
import 'reflect-metadata'
import { randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Body, Controller, Module, Post, UseInterceptors } from '@nestjs/common'
import { NestFactory } from '@nestjs/core'
import { FastifyAdapter } from '@nestjs/platform-fastify'
import { CreateQueueCommand, DeleteQueueCommand, SQSClient } from '@aws-sdk/client-sqs'
import { DeleteTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb'
import { connect as natsConnect } from '@nats-io/transport-node'
import { AckPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream'
import { metrics } from '@opentelemetry/api'
import * as amqp from 'amqplib'
import Database = require('better-sqlite3')
import { Queue, Worker } from 'bullmq'
import express = require('express')
import { fastify as Fastify } from 'fastify'
import { Hono } from 'hono'
import Redis from 'ioredis' // the default: ioredis exports the class by name only from 5.2.5
import { Redis as Valkey } from 'iovalkey'
import Koa = require('koa')
import { Kafka, logLevel, Partitioners } from 'kafkajs'
import { createPool } from 'mysql2/promise'
import { Pool } from 'pg'
import { Registry } from 'prom-client'
import { createClient } from 'redis'
import { createIdem, createLeasedIdem } from 'idem'
import { dynamodbStore } from 'idem/dynamodb'
import { idempotency as expressIdempotency } from 'idem/express'
import { idempotency as fastifyIdempotency } from 'idem/fastify'
import { idempotency as honoIdempotency } from 'idem/hono'
import { idempotency as koaIdempotency } from 'idem/koa'
import { memoryStore } from 'idem/memory'
import { mysqlStore } from 'idem/mysql'
import { IdempotencyInterceptor, IdempotencyModule } from 'idem/nestjs'
import { openTelemetryMetrics } from 'idem/opentelemetry'
import { postgresStore } from 'idem/postgres'
import { prometheusMetrics } from 'idem/prometheus'
import { createInbox, startConsumer, type Deliverer, type MessageSource, type OutboxRow } from 'idem/queue'
import { bullmqProcessor } from 'idem/queue/bullmq'
import { kafkaDeliverer, kafkaSource } from 'idem/queue/kafka'
import { natsDeliverer, natsSource } from 'idem/queue/nats'
import { rabbitmqDeliverer, rabbitmqSource } from 'idem/queue/rabbitmq'
import { sqsDeliverer, sqsSource } from 'idem/queue/sqs'
import { redisStore } from 'idem/redis'
import { sqliteStore } from 'idem/sqlite'

const env = (name: string): string => {
  const value = process.env[name]
  if (value === undefined || value === '') throw new Error(`${name} is not set`)
  return value
}
const version = (name: string): string =>
  (JSON.parse(readFileSync(join(process.cwd(), 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version
const say = (name: string, what: string): void => console.log(`${name}@${version(name)} ${what}`)
const suffix = randomUUID().slice(0, 8)
// One account for every request: the app has no authentication to read a principal from.
const scope = () => 'install-test'

/** Sends the same keyed POST twice; what each answer was: `<status> <idempotent-replayed or -> <body>`. */
async function twice(name: string, send: (headers: Record<string, string>) => Promise<Response>): Promise<string> {
  const headers = { 'content-type': 'application/json', 'idempotency-key': `"${name}-${suffix}"` }
  const answers: string[] = []
  for (let i = 0; i < 2; i++) {
    const response = await send(headers)
    answers.push(`${response.status} ${response.headers.get('idempotent-replayed') ?? '-'} ${await response.text()}`)
  }
  return answers.join(' | ')
}
const post = (url: string) => (headers: Record<string, string>) => fetch(url, { method: 'POST', headers, body: '{"amount":5}' })

async function nest(): Promise<void> {
  let orders = 0
  @Controller('orders')
  @UseInterceptors(IdempotencyInterceptor)
  class OrdersController {
    @Post()
    create(@Body() body: { amount: number }) {
      return { order: ++orders, amount: body.amount }
    }
  }
  @Module({
    imports: [IdempotencyModule.forRoot({ store: memoryStore(), scope })],
    controllers: [OrdersController],
  })
  class AppModule {}
  for (const platform of ['express', 'fastify'] as const) {
    orders = 0
    const app =
      platform === 'express'
        ? await NestFactory.create(AppModule, { logger: false, rawBody: true })
        : await NestFactory.create(AppModule, new FastifyAdapter(), { logger: false, rawBody: true })
    await app.listen(0, '127.0.0.1')
    say(`@nestjs/platform-${platform}`, await twice(platform, post(`${await app.getUrl()}/orders`)))
    await app.close()
  }
}

async function http(): Promise<void> {
  let orders = 0
  const handler = (amount: number) => ({ order: ++orders, amount })

  const app = express()
  app.use(expressIdempotency({ store: memoryStore(), scope }))
  app.use(express.json())
  app.post('/orders', (req, res) => {
    res.status(201).json(handler(req.body.amount))
  })
  const server = app.listen(0, '127.0.0.1')
  await new Promise((listening) => server.once('listening', listening))
  const { port } = server.address() as { port: number }
  say('express', await twice('express', post(`http://127.0.0.1:${port}/orders`)))
  server.close()

  orders = 0
  const fastify = Fastify()
  await fastify.register(fastifyIdempotency({ store: memoryStore(), scope }))
  fastify.post('/orders', async (request, reply) => reply.code(201).send(handler((request.body as { amount: number }).amount)))
  say('fastify', await twice('fastify', post(`${await fastify.listen({ port: 0, host: '127.0.0.1' })}/orders`)))
  await fastify.close()

  orders = 0
  const koa = new Koa()
  koa.use(koaIdempotency({ store: memoryStore(), scope }))
  koa.use(async (ctx) => {
    // What a body parser after the middleware reads: the bytes it hands on.
    const chunks: Buffer[] = []
    for await (const chunk of ctx.req) chunks.push(chunk as Buffer)
    ctx.status = 201
    ctx.body = handler((JSON.parse(Buffer.concat(chunks).toString('utf8')) as { amount: number }).amount)
  })
  const koaServer = koa.listen(0, '127.0.0.1')
  await new Promise((listening) => koaServer.once('listening', listening))
  say('koa', await twice('koa', post(`http://127.0.0.1:${(koaServer.address() as { port: number }).port}/orders`)))
  koaServer.close()

  orders = 0
  const hono = new Hono()
  hono.use('/orders', honoIdempotency({ store: memoryStore(), scope }))
  hono.post('/orders', async (c) => c.json(handler(((await c.req.json()) as { amount: number }).amount), 201))
  say('hono', await twice('hono', (headers) => Promise.resolve(hono.request('http://app/orders', { method: 'POST', headers, body: '{"amount":5}' }))))
}

/** Runs one effect twice under one key: how many times it ran, and whether the second call replayed. */
async function runTwice(run: (effect: () => Promise<number>) => Promise<{ value: number; replayed: boolean }>): Promise<string> {
  let runs = 0
  const effect = async () => ++runs
  const first = await run(effect)
  const second = await run(effect)
  return `ran ${runs}, replayed ${second.replayed}, value ${first.value}/${second.value}`
}

async function stores(): Promise<void> {
  const pool = new Pool({ connectionString: env('IDEM_TEST_PG_URL'), connectionTimeoutMillis: 5_000 })
  pool.on('error', (error: Error) => console.error('idle Postgres connection failed:', error.message))
  const schema = `idem_install_${suffix}`
  try {
    const store = postgresStore({ pool, schema })
    await store.migrate()
    const idem = createIdem({ store })
    say('pg', await runTwice((effect) => idem.run({ scope: 'a', key: 'k-1', input: { amount: 5 } }, effect)))
  } finally {
    await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    await pool.end()
  }

  // MySQL (MariaDB here) in a database of its own, made and dropped through the same pool's server.
  const database = `idem_install_${suffix}`
  const admin = createPool({ uri: env('IDEM_TEST_MYSQL_URL'), connectionLimit: 1 })
  await admin.query(`CREATE DATABASE \`${database}\``)
  const url = new URL(env('IDEM_TEST_MYSQL_URL'))
  url.pathname = `/${database}`
  const mysqlPool = createPool({ uri: url.toString(), connectionLimit: 4, charset: 'utf8mb4' })
  try {
    const store = mysqlStore({ pool: mysqlPool })
    await store.migrate()
    const onMysql = createIdem({ store })
    say('mysql2', await runTwice((effect) => onMysql.run({ scope: 'a', key: 'k-1', input: { amount: 5 } }, effect)))
  } finally {
    await mysqlPool.end()
    await admin.query(`DROP DATABASE IF EXISTS \`${database}\``)
    await admin.end()
  }

  const db = new Database(':memory:')
  const sqlite = sqliteStore({ db })
  sqlite.migrate()
  const onSqlite = createIdem({ store: sqlite })
  say('better-sqlite3', await runTwice((effect) => onSqlite.run({ scope: 'a', key: 'k-1', input: { amount: 5 } }, effect)))
  db.close()

  // The same Redis through each client the store takes: ioredis, iovalkey, node-redis.
  const redis = new Redis(env('IDEM_TEST_REDIS_URL'))
  const valkey = new Valkey(env('IDEM_TEST_REDIS_URL'))
  const nodeRedis = createClient({ url: env('IDEM_TEST_REDIS_URL') })
  try {
    await nodeRedis.connect()
    for (const [peer, client] of [['ioredis', redis], ['iovalkey', valkey], ['redis', nodeRedis]] as const) {
      const onRedis = createLeasedIdem({ store: redisStore({ client, prefix: `idem-install-${suffix}:${peer}:` }) })
      say(peer, await runTwice((effect) => onRedis.run({ scope: 'a', key: 'k-1', input: { amount: 5 } }, effect)))
    }
  } finally {
    const keys = await redis.keys(`idem-install-${suffix}:*`)
    if (keys.length > 0) await redis.del(...keys)
    redis.disconnect()
    valkey.disconnect()
    await nodeRedis.disconnect()
  }

  const dynamo = new DynamoDBClient({ endpoint: env('IDEM_TEST_DYNAMODB_URL'), region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } })
  const table = `idem_install_${suffix}`
  try {
    const store = dynamodbStore({ client: dynamo, table })
    await store.createTable()
    const onDynamo = createLeasedIdem({ store })
    say('@aws-sdk/client-dynamodb', await runTwice((effect) => onDynamo.run({ scope: 'a', key: 'k-1', input: { amount: 5 } }, effect)))
  } finally {
    await dynamo.send(new DeleteTableCommand({ TableName: table })).catch(() => {})
    dynamo.destroy()
  }
}

/**
 * One outbox row delivered twice (a dispatcher's retry after a lost confirm) through the
 * broker to an inbox consumer: how many deliveries reached the consumer, and how many
 * times the handler ran.
 */
async function roundTrip(deliver: Deliverer, source: MessageSource, topic: string, copiesArriving: number): Promise<string> {
  let runs = 0
  let settled = 0
  let allSettled!: () => void
  const done = new Promise<void>((resolve) => (allSettled = resolve))
  const consumer = await startConsumer({
    inbox: createInbox({ store: memoryStore(), consumer: 'install' }),
    source,
    handler: () => {
      runs++
    },
    onSettled: () => {
      if (++settled === copiesArriving) allSettled()
    },
  })
  const row: OutboxRow = { id: '1', topic, payload: { amount: 5 }, dedupeKey: `row-${suffix}`, attempt: 1, lastError: null, createdAt: new Date() }
  await deliver(row, { signal: AbortSignal.timeout(10_000) })
  await deliver({ ...row, attempt: 2 }, { signal: AbortSignal.timeout(10_000) })
  await done
  await consumer.stop()
  return `${settled} delivered, handled ${runs}`
}

async function queues(): Promise<void> {
  const connection = await amqp.connect(env('IDEM_TEST_AMQP_URL'))
  const queue = `idem-install-${suffix}`
  try {
    const channel = await connection.createChannel()
    await channel.assertQueue(queue, { durable: false })
    const confirm = await connection.createConfirmChannel()
    say('amqplib', await roundTrip(rabbitmqDeliverer({ channel: confirm }), rabbitmqSource({ channel, queue }), queue, 2))
    await channel.deleteQueue(queue)
  } finally {
    await connection.close()
  }

  const nc = await natsConnect({ servers: env('IDEM_TEST_NATS_URL'), timeout: 5_000 })
  const stream = `idem_install_${suffix}`
  const jsm = await jetstreamManager(nc)
  try {
    await jsm.streams.add({ name: stream, subjects: [stream] })
    await jsm.consumers.add(stream, { durable_name: 'install', ack_policy: AckPolicy.Explicit })
    const js = jetstream(nc)
    // JetStream drops the second copy itself (Nats-Msg-Id within the duplicate window).
    say('@nats-io/jetstream', await roundTrip(natsDeliverer({ js }), natsSource({ consumer: await js.consumers.get(stream, 'install') }), stream, 1))
  } finally {
    await jsm.streams.delete(stream).catch(() => {})
    await nc.close()
  }

  const sqs = new SQSClient({ endpoint: env('IDEM_TEST_SQS_URL'), region: 'us-east-1', credentials: { accessKeyId: 'test', secretAccessKey: 'test' } })
  const { QueueUrl: queueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: `idem-install-${suffix}` }))
  try {
    say('@aws-sdk/client-sqs', await roundTrip(sqsDeliverer({ client: sqs, queueUrl: queueUrl! }), sqsSource({ client: sqs, queueUrl: queueUrl!, waitTimeSeconds: 1 }), 'orders', 2))
  } finally {
    await sqs.send(new DeleteQueueCommand({ QueueUrl: queueUrl })).catch(() => {})
    sqs.destroy()
  }

  // librdkafka's mock cluster (the test starts it through kcat) creates the topic when the
  // consumer asks for it, and cannot serve kafkajs's idempotent producer, so both producers
  // (the deliverer's, the source's dead-letter one) run with `idempotent: false`.
  const kafka = new Kafka({ clientId: 'idem-install', brokers: env('IDEM_TEST_KAFKA_BROKERS').split(','), logLevel: logLevel.NOTHING })
  const topic = `idem-install-${suffix}`
  const producerConfig = { createPartitioner: Partitioners.DefaultPartitioner }
  const deliver = kafkaDeliverer({ kafka, idempotent: false, producerConfig })
  try {
    const source = kafkaSource({ kafka, groupId: `idem-install-${suffix}`, topics: [topic], idempotent: false, producerConfig })
    say('kafkajs', await roundTrip(deliver, source, topic, 2))
  } finally {
    await deliver.close()
  }

  // BullMQ: a job added again under its jobId once the first completed (and was removed).
  const redisUrl = new URL(env('IDEM_TEST_REDIS_URL'))
  const bullmqConnection = { host: redisUrl.hostname, port: Number(redisUrl.port || 6379) } // BullMQ 5 takes no `url`
  const jobs = new Queue(`idem-install-${suffix}`, { connection: bullmqConnection })
  let runs = 0
  let completed = 0
  const worker = new Worker(jobs.name, bullmqProcessor({ inbox: createInbox({ store: memoryStore(), consumer: 'install' }), handler: () => void runs++ }), { connection: bullmqConnection })
  try {
    for (let copy = 0; copy < 2; copy++) {
      const done = new Promise((resolve) => worker.once('completed', resolve))
      await jobs.add('order', { amount: 5 }, { jobId: `order-${suffix}`, removeOnComplete: true })
      await done
      completed++
    }
    say('bullmq', `${completed} completed, handled ${runs}`)
  } finally {
    await worker.close()
    await jobs.obliterate({ force: true })
    await jobs.close()
  }
}

/** The exporters subscribe to the event stream; a run must show up in what they export. */
async function exporters(): Promise<void> {
  const registry = new Registry()
  const prometheus = prometheusMetrics({ registry })
  // The global meter (no SDK registered: the API's no-op meter): every instrument idem
  // makes must exist in this version of the API.
  const otel = openTelemetryMetrics({ meter: metrics.getMeter('idem-install') })
  await createIdem({ store: memoryStore() }).run({ scope: 'a', key: 'k-1', input: 1 }, () => 1)
  const calls = (await registry.metrics()).split('\n').find((line) => line.startsWith('idem_') && line.includes('outcome="fresh"'))
  say('prom-client', calls === undefined ? 'no fresh outcome exported' : 'exports the fresh outcome')
  say('@opentelemetry/api', 'instruments made, the run recorded')
  prometheus.stop()
  otel.stop()
}

async function main(): Promise<void> {
  await nest()
  await http()
  await stores()
  await queues()
  await exporters()
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error)
    process.exit(1)
  },
)
