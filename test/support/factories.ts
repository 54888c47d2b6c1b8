// Every public function of idem that takes an options object, called the way a user
// calls it: through the built package's entry points (`idem`, `idem/postgres`, …). The
// options test (test/options/misspelt.test.ts) and the options fuzz (test/chaos/fuzz-options.test.ts)
// share this table. Which exports are factories is decided here, once: every exported
// function is either a target below or in NOT_FACTORIES with the reason it takes no
// options object, and test/options/misspelt.test.ts fails on an export that is in neither.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { DynamoDBClient } from '@aws-sdk/client-dynamodb'
import { SQSClient } from '@aws-sdk/client-sqs'
import { metrics } from '@opentelemetry/api'
import Database from 'better-sqlite3'
import { Redis } from 'ioredis'
import { Kafka, logLevel } from 'kafkajs'
import mysql from 'mysql2/promise'
import pg from 'pg'
import { Registry } from 'prom-client'
import { freePort } from './free-port.js'

// Loose on purpose: the targets are called with misspelt options their types refuse.
type Fn = any
type Options = Record<string, unknown>

/** The package's entry points, as a user imports them (`.` is `idem`). */
export const ENTRY_POINTS: string[] = Object.keys(
  (JSON.parse(readFileSync(join(new URL('../..', import.meta.url).pathname, 'package.json'), 'utf8')) as { exports: Record<string, unknown> }).exports,
)
  .filter((entry) => entry !== './package.json')
  .map((entry) => (entry === '.' ? 'idem' : `idem/${entry.slice(2)}`))

/** Loads one entry point of the built package. */
export function load(entry: string): Promise<Record<string, unknown>> {
  return import(entry) as Promise<Record<string, unknown>>
}

/**
 * What the targets are made with: real clients that connect only when used (a factory
 * only keeps its client), pointed at a loopback port nothing listens on, so a target
 * that does reach the network (`prune`, `migratePostgres`) fails at once with a
 * connection error, not an option error, instead of hanging. The brokers whose clients
 * cannot exist unconnected (an amqplib channel, a NATS JetStream consumer) are stood in
 * for by objects of the shape the factory checks.
 */
export interface Resources {
  closedPort: number
  pool: pg.Pool
  /** A mysql2 pool on the closed port (it connects only when used). */
  mysqlPool: mysql.Pool
  db: Database.Database
  sqlite: Fn
  /** The SQL dialects of `idem/data`'s helpers, from their stores. */
  sqliteDialect: Fn
  postgresDialect: Fn
  memory: Fn
  memoryLeased: Fn
  /** A new leased engine over the memory leased store. */
  leased: () => Fn
  /** A store with `peek`, for a dual-read window's `previous`. */
  peekable: Fn
  /** A new inbox over the SQLite store. */
  inbox: () => Fn
  redis: Redis
  dynamo: DynamoDBClient
  sqs: SQSClient
  kafka: Kafka
  registry: () => Registry
  close(): Promise<void>
}

export async function openResources(): Promise<Resources> {
  const { sqliteStore, sqliteDialect } = (await load('idem/sqlite')) as Record<string, Fn>
  const { memoryStore, memoryLeasedStore } = (await load('idem/memory')) as Record<string, Fn>
  const { postgresStore, postgresDialect } = (await load('idem/postgres')) as Record<string, Fn>
  const { createInbox } = (await load('idem/queue')) as Record<string, Fn>
  const { createLeasedIdem } = (await load('idem')) as Record<string, Fn>
  const closedPort = await freePort()
  const pool = new pg.Pool({ connectionString: `postgres://postgres@127.0.0.1:${closedPort}/none`, connectionTimeoutMillis: 1_000 })
  pool.on('error', () => {})
  const mysqlPool = mysql.createPool({ uri: `mysql://root@127.0.0.1:${closedPort}/none`, connectTimeout: 1_000 })
  const db = new Database(':memory:')
  const sqlite = sqliteStore({ db })
  sqlite.migrate()
  db.exec('CREATE TABLE docs (id TEXT PRIMARY KEY, body TEXT)')
  const redis = new Redis({ host: '127.0.0.1', port: closedPort, lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false })
  const aws = { region: 'us-east-1', endpoint: `http://127.0.0.1:${closedPort}`, credentials: { accessKeyId: 'x', secretAccessKey: 'x' } }
  return {
    closedPort,
    pool,
    mysqlPool,
    db,
    sqlite,
    sqliteDialect,
    postgresDialect,
    memory: memoryStore(),
    memoryLeased: memoryLeasedStore(),
    leased: () => createLeasedIdem({ store: memoryLeasedStore() }),
    peekable: postgresStore({ pool }),
    inbox: () => createInbox({ store: sqlite, consumer: 'c' }),
    redis,
    dynamo: new DynamoDBClient(aws),
    sqs: new SQSClient(aws),
    kafka: new Kafka({ brokers: [`127.0.0.1:${closedPort}`], logLevel: logLevel.NOTHING }),
    registry: () => new Registry(),
    async close() {
      redis.disconnect()
      db.close()
      await pool.end()
      await mysqlPool.end()
    },
  }
}

/** A function that takes options, and how to call it. */
export interface OptionTarget {
  /** The entry point it is exported from (`idem`, `idem/postgres`, …). */
  entry: string
  /** The export: the factory itself, or the one whose result has the method. */
  export: string
  /** What the target is, when it is not the export itself (a method, a nested option). */
  part?: string
  /** How errors name it: the text before `: "<name>" is not an option`. */
  caller: string
  /** The smallest options the target accepts. */
  minimal(r: Resources): Options
  /** Calls the export (or the method on what it makes) with `options` where they go. */
  call(fn: Fn, options: Options, r: Resources): unknown
  /** Frees what a call that was accepted made. */
  dispose?(made: Fn): unknown
  /**
   * Misspellings users make (the first ones are those idem's defect list tried), each
   * with the name it means; `null` when no option is near enough to suggest.
   */
  typos: Array<[wrong: string, right: string | null]>
}

const source = () => ({ name: 'test', subscribe: async () => ({ close: async () => {} }) })
const amqpChannel = () => ({ consume: async () => ({ consumerTag: 't' }), prefetch: async () => {}, cancel: async () => {}, publish: () => true })
const natsConsumer = () => ({ consume: async () => ({ close: async () => {}, [Symbol.asyncIterator]: async function* () {} }) })
const stop = (made: Fn) => made.stop()
const close = (made: Fn) => made.close()

export const TARGETS: OptionTarget[] = [
  // idem
  { entry: 'idem', export: 'createIdem', caller: 'createIdem', minimal: (r) => ({ store: r.memory }), call: (f, o) => f(o), typos: [['ttlMS', 'ttlMs'], ['waitms', 'waitMs'], ['onOutcomes', 'onOutcome']] },
  {
    entry: 'idem', export: 'createIdem', part: 'run', caller: 'run',
    minimal: () => ({ scope: 'a', key: 'k1', input: 1 }),
    call: (f, o, r) => f({ store: r.memory }).run(o, () => 1),
    typos: [['waitMS', 'waitMs'], ['inputs', 'input']],
  },
  { entry: 'idem', export: 'createLeasedIdem', caller: 'createLeasedIdem', minimal: (r) => ({ store: r.memoryLeased }), call: (f, o) => f(o), typos: [['leaseMS', 'leaseMs'], ['heartbeatms', 'heartbeatMs']] },
  {
    entry: 'idem', export: 'createLeasedIdem', part: 'run', caller: 'run',
    minimal: () => ({ scope: 'a', key: 'k1', input: 1 }),
    call: (f, o, r) => f({ store: r.memoryLeased }).run(o, () => 1),
    typos: [['ttlMS', 'ttlMs'], ['fingerprnt', 'fingerprint']],
  },
  {
    entry: 'idem', export: 'dualReadStore', caller: 'dualReadStore',
    minimal: (r) => ({ current: r.memoryLeased, previous: r.peekable }),
    call: (f, o) => f(o),
    typos: [['untill', 'until'], ['previus', 'previous']],
  },
  {
    entry: 'idem', export: 'dualReadKeyStore', caller: 'dualReadKeyStore',
    minimal: (r) => ({ current: r.memory, previous: r.peekable }),
    call: (f, o) => f(o),
    typos: [['Until', 'until'], ['curent', 'current']],
  },
  ...['idem', 'idem/encrypted'].map((entry): OptionTarget => ({
    entry, export: 'encryptedStore', caller: 'encryptedStore',
    minimal: () => ({ keys: { k1: Buffer.alloc(32, 1) }, current: 'k1' }),
    call: (f, o, r) => f(r.memory, o),
    typos: [['acceptPlainText', 'acceptPlaintext'], ['key', 'keys']],
  })),
  { entry: 'idem', export: 'parseIdempotencyKey', caller: 'parseIdempotencyKey', minimal: () => ({}), call: (f, o) => f('"k1"', o), typos: [['strikt', 'strict']] },
  {
    entry: 'idem', export: 'fingerprintRequest', caller: 'fingerprintRequest',
    minimal: () => ({ method: 'POST', route: '/orders' }),
    call: (f, o) => f(o),
    typos: [['bodey', 'body'], ['contentTyp', 'contentType'], ['Query', 'query']],
  },

  // idem/postgres
  { entry: 'idem/postgres', export: 'postgresStore', caller: 'postgresStore', minimal: (r) => ({ pool: r.pool }), call: (f, o) => f(o), typos: [['keylayout', 'keyLayout'], ['schem', 'schema'], ['isolaton', 'isolation']] },
  {
    entry: 'idem/postgres', export: 'postgresStore', part: 'prune', caller: 'prune',
    minimal: () => ({}),
    call: (f, o, r) => f({ pool: r.pool }).prune(o),
    typos: [['batchsize', 'batchSize'], ['deliveredOutboxOlderThan', 'deliveredOutboxOlderThanMs']],
  },
  { entry: 'idem/postgres', export: 'leasedPostgresStore', caller: 'leasedPostgresStore', minimal: (r) => ({ pool: r.pool }), call: (f, o) => f(o), typos: [['schem', 'schema'], ['Pool', 'pool']] },
  {
    entry: 'idem/postgres', export: 'leasedPostgresStore', part: 'prune', caller: 'prune',
    minimal: () => ({}),
    call: (f, o, r) => f({ pool: r.pool }).prune(o),
    typos: [['onbatch', 'onBatch']],
  },
  { entry: 'idem/postgres', export: 'migratePostgres', caller: 'migratePostgres', minimal: () => ({}), call: (f, o, r) => f(r.pool, o), typos: [['shema', 'schema']] },

  // idem/mysql
  { entry: 'idem/mysql', export: 'mysqlStore', caller: 'mysqlStore', minimal: (r) => ({ pool: r.mysqlPool }), call: (f, o) => f(o), typos: [['maxOutcomeBytess', 'maxOutcomeBytes'], ['Pool', 'pool']] },
  {
    entry: 'idem/mysql', export: 'mysqlStore', part: 'prune', caller: 'prune',
    minimal: () => ({}),
    call: (f, o, r) => f({ pool: r.mysqlPool }).prune(o),
    typos: [['batchsize', 'batchSize'], ['deliveredOutboxOlderThan', 'deliveredOutboxOlderThanMs']],
  },
  { entry: 'idem/mysql', export: 'mysqlOperator', caller: 'mysqlOperator', minimal: (r) => ({ pool: r.mysqlPool }), call: (f, o) => f(o), typos: [['pol', 'pool']] },

  // idem/sqlite
  { entry: 'idem/sqlite', export: 'sqliteStore', caller: 'sqliteStore', minimal: (r) => ({ db: r.db }), call: (f, o) => f(o), typos: [['busyTimeoutMS', 'busyTimeoutMs'], ['DB', 'db']] },
  {
    entry: 'idem/sqlite', export: 'sqliteStore', part: 'prune', caller: 'prune',
    minimal: () => ({}),
    call: (f, o, r) => f({ db: r.db }).prune(o),
    typos: [['batchSise', 'batchSize'], ['onBatches', 'onBatch']],
  },
  { entry: 'idem/sqlite', export: 'leasedSqliteStore', caller: 'leasedSqliteStore', minimal: (r) => ({ db: r.db }), call: (f, o) => f(o), typos: [['busytimeoutMs', 'busyTimeoutMs']] },
  {
    entry: 'idem/sqlite', export: 'leasedSqliteStore', part: 'prune', caller: 'prune',
    minimal: () => ({}),
    call: (f, o, r) => f({ db: r.db }).prune(o),
    typos: [['batchsize', 'batchSize']],
  },

  // idem/testing
  {
    entry: 'idem/testing', export: 'startFaultProxy', caller: 'startFaultProxy',
    minimal: (r) => ({ target: `http://127.0.0.1:${r.closedPort}` }),
    call: (f, o) => f(o),
    dispose: close,
    typos: [['dropResponseProbabilty', 'dropResponseProbability'], ['seeed', 'seed']],
  },
  {
    entry: 'idem/testing', export: 'startTcpFaultProxy', caller: 'startTcpFaultProxy',
    minimal: (r) => ({ target: `127.0.0.1:${r.closedPort}` }),
    call: (f, o) => f(o),
    dispose: close,
    typos: [['maxconnections', 'maxConnections'], ['connectTimeout', 'connectTimeoutMs']],
  },

  // idem/data
  { entry: 'idem/data', export: 'createMemo', caller: 'createMemo', minimal: (r) => ({ store: r.memory }), call: (f, o) => f(o), typos: [['waitMS', 'waitMs'], ['ttl', 'ttlMs']] },
  {
    entry: 'idem/data', export: 'createMemo', part: 'memo', caller: 'memo',
    minimal: () => ({}),
    call: (f, o, r) => f({ store: r.memory })('step', { n: 1 }, () => 'out', o),
    typos: [['versoin', 'version'], ['Version', 'version']],
  },
  { entry: 'idem/data', export: 'createOnce', caller: 'createOnce', minimal: (r) => ({ store: r.sqlite }), call: (f, o) => f(o), typos: [['stor', 'store']] },
  {
    entry: 'idem/data', export: 'reconcile', caller: 'reconcile',
    minimal: (r) => ({ dialect: r.sqliteDialect, client: r.db, table: 'docs', columns: ['body'] }),
    call: (f, o) => f(o),
    typos: [['treshold', 'threshold'], ['column', 'columns']],
  },
  {
    entry: 'idem/data', export: 'upsertSql', caller: 'upsertSql',
    minimal: () => ({ table: 'docs', key: 'id', columns: ['body'] }),
    call: (f, o, r) => f(r.sqliteDialect, o),
    typos: [['skipUnchaged', 'skipUnchanged'], ['keys', 'key']],
  },
  {
    entry: 'idem/data', export: 'upsert', part: 'sqlite', caller: 'upsert',
    minimal: () => ({ table: 'docs', key: 'id', columns: ['body'] }),
    call: (f, o, r) => f(r.sqliteDialect, r.db, o, { id: 'd1', body: 'x' }),
    typos: [['colums', 'columns']],
  },
  {
    entry: 'idem/data', export: 'upsert', part: 'postgres', caller: 'upsert',
    minimal: () => ({ table: 'docs', key: 'id', columns: ['body'] }),
    call: (f, o, r) => f(r.postgresDialect, r.pool, o, { id: 'd1', body: 'x' }),
    typos: [['schmea', 'schema']],
  },

  // idem/client
  { entry: 'idem/client', export: 'createClient', caller: 'createClient', minimal: () => ({}), call: (f, o) => f(o), typos: [['maxAtempts', 'maxAttempts'], ['deadlineMS', 'deadlineMs']] },
  {
    entry: 'idem/client', export: 'createClient', part: 'fetch', caller: 'fetch',
    minimal: () => ({}),
    call: (f, o) => f({ fetch: async () => new Response('ok') }).fetch('http://example.test/orders', { method: 'POST' }, o),
    typos: [['kye', 'key'], ['Key', 'key']],
  },
  {
    entry: 'idem/client', export: 'createClient', part: 'backoff', caller: 'createClient: option "backoff"',
    minimal: () => ({}),
    call: (f, o) => f({ backoff: o }),
    typos: [['maxMS', 'maxMs'], ['basems', 'baseMs']],
  },
  {
    entry: 'idem/client', export: 'backoffDelay', caller: 'myClient: option "backoff"',
    minimal: () => ({}),
    call: (f, o) => f(o, 'myClient'),
    typos: [['maxMS', 'maxMs']],
  },

  // idem/fetch and the framework adapters: one options checker, resolveOptions
  ...['idem/fetch', 'idem/hono', 'idem/express', 'idem/koa', 'idem/fastify'].map((entry): OptionTarget => ({
    entry, export: 'idempotency', caller: 'idempotency',
    minimal: (r) => ({ store: r.memory, scope: () => 'a' }),
    call: (f, o) => f(o),
    typos: [['waitms', 'waitMs'], ['maxBodyBites', 'maxBodyBytes']],
  })),
  {
    entry: 'idem/fetch', export: 'idempotencyPolicy', caller: 'idempotency',
    minimal: () => ({}),
    call: (f, o) => f(o, { format: 'json' }),
    typos: [['replayHeader', 'replayHeaders']],
  },
  {
    entry: 'idem/fetch', export: 'idempotencyPolicy', part: 'format', caller: 'idempotencyPolicy',
    minimal: () => ({ format: 'md' }),
    call: (f, o) => f({}, o),
    typos: [['tilte', 'title'], ['headinglevel', 'headingLevel']],
  },
  {
    entry: 'idem/fetch', export: 'webhookReceiver', caller: 'webhookReceiver',
    minimal: (r) => ({ inbox: r.inbox(), eventId: 'stripe', handler: () => {} }),
    call: (f, o) => f(o),
    typos: [['maxBodyByte', 'maxBodyBytes'], ['verfy', 'verify'], ['event', 'events']],
  },
  {
    entry: 'idem/hono', export: 'webhookReceiver', caller: 'webhookReceiver',
    minimal: (r) => ({ inbox: r.inbox(), eventId: 'stripe', handler: () => {} }),
    call: (f, o) => f(o),
    typos: [['maxBodyByte', 'maxBodyBytes'], ['verfy', 'verify'], ['event', 'events']],
  },
  {
    entry: 'idem/express', export: 'webhookReceiver', caller: 'webhookReceiver',
    minimal: (r) => ({ inbox: r.inbox(), eventId: 'stripe', handler: () => {} }),
    call: (f, o) => f(o),
    typos: [['maxBodyByte', 'maxBodyBytes'], ['verfy', 'verify'], ['event', 'events']],
  },
  {
    entry: 'idem/koa', export: 'webhookReceiver', caller: 'webhookReceiver',
    minimal: (r) => ({ inbox: r.inbox(), eventId: 'stripe', handler: () => {} }),
    call: (f, o) => f(o),
    typos: [['maxBodyByte', 'maxBodyBytes'], ['verfy', 'verify'], ['event', 'events']],
  },
  {
    entry: 'idem/fastify', export: 'webhookReceiver', caller: 'webhookReceiver',
    minimal: (r) => ({ inbox: r.inbox(), eventId: 'stripe', handler: () => {} }),
    call: (f, o) => f(o),
    typos: [['maxBodyByte', 'maxBodyBytes'], ['verfy', 'verify'], ['event', 'events']],
  },
  {
    entry: 'idem/nestjs', export: 'webhookReceiver', caller: 'webhookReceiver',
    minimal: (r) => ({ inbox: r.inbox(), eventId: 'stripe', handler: () => {} }),
    call: (f, o) => f(o),
    typos: [['maxBodyByte', 'maxBodyBytes'], ['verfy', 'verify'], ['event', 'events']],
  },
  {
    entry: 'idem/lambda', export: 'webhookReceiver', caller: 'webhookReceiver',
    minimal: (r) => ({ inbox: r.inbox(), eventId: 'stripe', handler: () => {} }),
    call: (f, o) => f(o),
    typos: [['maxBodyByte', 'maxBodyBytes'], ['verfy', 'verify'], ['event', 'events']],
  },
  { entry: 'idem/fetch', export: 'putResponse', caller: 'putResponse', minimal: () => ({ created: true, body: {} }), call: (f, o) => f(o), typos: [['locaton', 'location']] },
  {
    entry: 'idem/fetch', export: 'problem', caller: 'problem',
    minimal: () => ({}),
    call: (f, o) => f('missing-key', 'detail', o),
    typos: [['header', 'headers'], ['retryAfterSecond', 'retryAfterSeconds']],
  },

  // idem/webhooks: each verifier takes its secret(s) and, where the scheme has one, a tolerance
  ...(
    [
      ['stripeSignature', 'whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQ', true],
      ['githubSignature', 'gh-secret', false],
      ['standardWebhooksSignature', 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', true],
      ['shopifySignature', 'shop-secret', false],
      ['slackSignature', 'slack-secret', true],
    ] as const
  ).map(([name, secret, tolerance]): OptionTarget => ({
    entry: 'idem/webhooks', export: name, caller: name,
    minimal: () => ({ secret }),
    call: (f: Fn, o: Options) => f(o),
    typos: tolerance
      ? [['secrets', 'secret'], ['toleranceMS', 'toleranceMs']]
      : [['Secret', 'secret'], ['secrte', 'secret']],
  })),

  // idem/openapi: each takes the middleware's options (checked by idempotency(), above) and its own
  {
    entry: 'idem/openapi', export: 'idempotencyOpenApi', part: 'openApi', caller: 'idempotencyOpenApi',
    minimal: () => ({}),
    call: (f, o, r) => f({ openapi: '3.1.0', info: { title: 't', version: '1' }, paths: {} }, { store: r.memory, scope: () => 'a' }, o),
    typos: [['operation', 'operations'], ['problemSchem', 'problemSchema']],
  },
  {
    entry: 'idem/openapi/fastify', export: 'idempotencyWithOpenApi', part: 'openApi', caller: 'idempotencyWithOpenApi (fastify)',
    minimal: () => ({}),
    call: (f, o, r) => f({ store: r.memory, scope: () => 'a' }, o),
    typos: [['Operations', 'operations'], ['problemschema', 'problemSchema']],
  },
  {
    entry: 'idem/openapi/hono', export: 'idempotencyWithOpenApi', part: 'openApi', caller: 'idempotencyWithOpenApi (hono)',
    minimal: () => ({}),
    call: (f, o, r) => f({ openAPIRegistry: { registerComponent: () => undefined } }, { store: r.memory, scope: () => 'a' }, o),
    typos: [['problemSchemma', 'problemSchema']],
  },

  // idem/nestjs
  {
    entry: 'idem/nestjs', export: 'IdempotencyModule', part: 'forRoot', caller: 'idempotency',
    minimal: (r) => ({ store: r.memory, scope: () => 'a' }),
    call: (f, o) => f.forRoot(o),
    typos: [['scopes', 'scope']],
  },
  {
    entry: 'idem/nestjs', export: 'IdempotencyModule', part: 'forRootAsync', caller: 'IdempotencyModule.forRootAsync',
    minimal: (r) => ({ useFactory: () => ({ store: r.memory, scope: () => 'a' }) }),
    call: (f, o) => f.forRootAsync(o),
    typos: [['injects', 'inject'], ['usefactory', 'useFactory']],
  },
  { entry: 'idem/nestjs', export: 'IdempotencyProtection', caller: 'idempotency', minimal: (r) => ({ store: r.memory, scope: () => 'a' }), call: (f, o) => new f(o), typos: [['strickt', 'strict']] },
  { entry: 'idem/nestjs', export: 'IdempotencyInterceptor', caller: 'idempotency', minimal: (r) => ({ store: r.memory, scope: () => 'a' }), call: (f, o) => new f(o), typos: [['method', 'methods']] },

  // idem/queue
  {
    entry: 'idem/queue', export: 'createDispatcher', caller: 'createDispatcher',
    minimal: (r) => ({ store: r.sqlite, deliver: async () => {} }),
    call: (f, o) => f(o),
    typos: [['pool', null], ['maxAttempt', 'maxAttempts'], ['pollms', 'pollMs']],
  },
  {
    entry: 'idem/queue', export: 'createDispatcher', part: 'backoff', caller: 'createDispatcher: option "backoff"',
    minimal: () => ({}),
    call: (f, o, r) => f({ store: r.sqlite, deliver: async () => {}, backoff: o }),
    typos: [['baseMS', 'baseMs']],
  },
  { entry: 'idem/queue', export: 'createInbox', caller: 'createInbox', minimal: (r) => ({ store: r.sqlite, consumer: 'c' }), call: (f, o) => f(o), typos: [['retentionMS', 'retentionMs'], ['consummer', 'consumer']] },
  {
    entry: 'idem/queue', export: 'createInbox', part: 'consume', caller: 'consume',
    minimal: () => ({}),
    call: (f, o, r) => f({ store: r.sqlite, consumer: 'c' }).consume({ id: `m-${Math.random()}`, body: {} }, () => {}, o),
    typos: [['deadlineMS', 'deadlineMs'], ['waitMS', 'waitMs']],
  },
  { entry: 'idem/queue', export: 'createOutbox', caller: 'createOutbox', minimal: (r) => ({ store: r.sqlite }), call: (f, o) => f(o), typos: [['stores', 'store']] },
  {
    entry: 'idem/queue', export: 'createOutbox', part: 'add', caller: 'outbox.add',
    minimal: () => ({ topic: 't', payload: {}, dedupeKey: `d-${Math.random()}` }),
    call: (f, o, r) => {
      const outbox = f({ store: r.sqlite })
      // SQLite's outbox adds only inside the transaction of the effect.
      return r.db.transaction(() => outbox.add(r.db, o))()
    },
    typos: [['dedupKey', 'dedupeKey'], ['delay', 'delayMs']],
  },
  {
    entry: 'idem/queue', export: 'startConsumer', caller: 'startConsumer',
    minimal: (r) => ({ inbox: r.inbox(), source: source(), handler: () => {} }),
    call: (f, o) => f(o),
    dispose: stop,
    typos: [['storeRetryMS', 'storeRetryMs'], ['handle', 'handler']],
  },
  {
    entry: 'idem/queue', export: 'startConsumer', part: 'retry', caller: 'startConsumer: option "retry"',
    minimal: () => ({}),
    call: (f, o, r) => f({ inbox: r.inbox(), source: source(), handler: () => {}, retry: o }),
    dispose: stop,
    typos: [['maxms', 'maxMs']],
  },
  {
    entry: 'idem/queue', export: 'backoffDelay', caller: 'myWorker: option "backoff"',
    minimal: () => ({}),
    call: (f, o) => f(o, 'myWorker'),
    typos: [['basems', 'baseMs']],
  },
  { entry: 'idem/queue', export: 'listDeadLetters', caller: 'listDeadLetters', minimal: () => ({ source: 'inbox' }), call: (f, o, r) => f(r.sqlite, o), typos: [['limt', 'limit'], ['sorce', 'source']] },

  // the brokers
  { entry: 'idem/queue/rabbitmq', export: 'rabbitmqSource', caller: 'rabbitmqSource', minimal: () => ({ channel: amqpChannel(), queue: 'q' }), call: (f, o) => f(o), typos: [['prefech', 'prefetch']] },
  { entry: 'idem/queue/rabbitmq', export: 'rabbitmqDeliverer', caller: 'rabbitmqDeliverer', minimal: () => ({ channel: amqpChannel() }), call: (f, o) => f(o), typos: [['routingkey', 'routingKey']] },
  {
    entry: 'idem/queue/redis-streams', export: 'redisStreamSource', caller: 'redisStreamSource',
    minimal: (r) => ({ redis: r.redis, stream: 's', group: 'g', consumer: 'c' }),
    call: (f, o) => f(o),
    typos: [['blockMS', 'blockMs'], ['deadLetterSteam', 'deadLetterStream']],
  },
  { entry: 'idem/queue/redis-streams', export: 'redisStreamDeliverer', caller: 'redisStreamDeliverer', minimal: (r) => ({ redis: r.redis }), call: (f, o) => f(o), typos: [['maxlen', 'maxLen']] },
  { entry: 'idem/queue/nats', export: 'natsSource', caller: 'natsSource', minimal: () => ({ consumer: natsConsumer() }), call: (f, o) => f(o), typos: [['ackTimeoutMS', 'ackTimeoutMs']] },
  { entry: 'idem/queue/nats', export: 'natsDeliverer', caller: 'natsDeliverer', minimal: () => ({ js: { publish: async () => ({ duplicate: false, seq: 1 }) } }), call: (f, o) => f(o), typos: [['subjet', 'subject']] },
  { entry: 'idem/queue/sqs', export: 'sqsSource', caller: 'sqsSource', minimal: (r) => ({ client: r.sqs, queueUrl: 'http://127.0.0.1/q' }), call: (f, o) => f(o), typos: [['queueURL', 'queueUrl'], ['maxMessage', 'maxMessages']] },
  { entry: 'idem/queue/sqs', export: 'sqsDeliverer', caller: 'sqsDeliverer', minimal: (r) => ({ client: r.sqs, queueUrl: 'http://127.0.0.1/q' }), call: (f, o) => f(o), typos: [['queueurl', 'queueUrl']] },
  { entry: 'idem/queue/kafka', export: 'kafkaSource', caller: 'kafkaSource', minimal: (r) => ({ kafka: r.kafka, groupId: 'g', topics: ['t'] }), call: (f, o) => f(o), typos: [['groupID', 'groupId']] },
  { entry: 'idem/queue/kafka', export: 'kafkaDeliverer', caller: 'kafkaDeliverer', minimal: (r) => ({ kafka: r.kafka }), call: (f, o) => f(o), dispose: close, typos: [['idempotnt', 'idempotent']] },
  { entry: 'idem/queue/bullmq', export: 'bullmqProcessor', caller: 'bullmqProcessor', minimal: (r) => ({ inbox: r.inbox(), handler: () => {} }), call: (f, o) => f(o), typos: [['storeRetryMS', 'storeRetryMs'], ['handle', 'handler']] },

  // the other stores
  { entry: 'idem/redis', export: 'redisStore', caller: 'redisStore', minimal: (r) => ({ client: r.redis }), call: (f, o) => f(o), typos: [['prefx', 'prefix'], ['timeoutMS', 'timeoutMs']] },
  // the stores' operators
  { entry: 'idem/postgres', export: 'postgresOperator', caller: 'postgresOperator', minimal: (r) => ({ pool: r.pool }), call: (f, o) => f(o), typos: [['schemma', 'schema'], ['keylayout', 'keyLayout']] },
  { entry: 'idem/sqlite', export: 'sqliteOperator', caller: 'sqliteOperator', minimal: (r) => ({ db: r.db }), call: (f, o) => f(o), typos: [['database', null], ['dB', 'db']] },
  { entry: 'idem/redis', export: 'redisOperator', caller: 'redisOperator', minimal: (r) => ({ client: r.redis }), call: (f, o) => f(o), typos: [['prefx', 'prefix']] },
  { entry: 'idem/dynamodb', export: 'dynamodbOperator', caller: 'dynamodbOperator', minimal: (r) => ({ client: r.dynamo, table: 'idem' }), call: (f, o) => f(o), typos: [['tabel', 'table'], ['timeoutMS', 'timeoutMs']] },
  ...(['postgresOperator', 'sqliteOperator', 'dynamodbOperator'] as const).map((name): OptionTarget => ({
    entry: name === 'postgresOperator' ? 'idem/postgres' : name === 'sqliteOperator' ? 'idem/sqlite' : 'idem/dynamodb', export: name, part: 'prune', caller: 'prune',
    minimal: () => ({}),
    call: (f, o, r) => f(name === 'postgresOperator' ? { pool: r.pool } : name === 'sqliteOperator' ? { db: r.db } : { client: r.dynamo, table: 'idem' }).prune(o),
    typos: [['batchsize', 'batchSize'], ['onbatch', 'onBatch']],
  })),
  { entry: 'idem/dynamodb', export: 'dynamodbStore', caller: 'dynamodbStore', minimal: (r) => ({ client: r.dynamo, table: 'idem' }), call: (f, o) => f(o), typos: [['holdMS', 'holdMs']] },

  // idem/lambda
  { entry: 'idem/lambda', export: 'makeIdempotent', caller: 'makeIdempotent', minimal: (r) => ({ store: r.memory }), call: (f, o) => f(() => 1, o), typos: [['marginMS', 'marginMs'], ['Key', 'key'], ['expiresAfterSeconds', null]] },
  { entry: 'idem/lambda', export: 'middyIdempotent', caller: 'middyIdempotent', minimal: (r) => ({ idem: r.leased() }), call: (f, o) => f(o), typos: [['scop', 'scope'], ['inputs', 'input']] },
  {
    entry: 'idem/lambda', export: 'makeHttpHandler', caller: 'makeHttpHandler',
    minimal: (r) => ({ store: r.memory, scope: () => 'a' }),
    call: (f, o) => f(async () => ({ statusCode: 200, body: '' }), o),
    typos: [['marginMS', 'marginMs'], ['replayHeader', 'replayHeaders'], ['scopes', 'scope']],
  },
  {
    entry: 'idem/lambda', export: 'makeSqsBatchHandler', caller: 'makeSqsBatchHandler',
    minimal: (r) => ({ inbox: r.inbox() }),
    call: (f, o) => f(() => {}, o),
    typos: [['idAtribute', 'idAttribute'], ['concurency', 'concurrency']],
  },

  // metrics
  ...['idem/metrics', 'idem/prometheus'].map((entry): OptionTarget => ({
    entry, export: 'prometheusMetrics', caller: 'prometheusMetrics',
    minimal: (r) => ({ registry: r.registry() }),
    call: (f, o) => f(o),
    dispose: stop,
    typos: [['prefx', 'prefix'], ['store', 'stores']],
  })),
  { entry: 'idem/opentelemetry', export: 'openTelemetryMetrics', caller: 'openTelemetryMetrics', minimal: () => ({ meter: metrics.getMeter('test') }), call: (f, o) => f(o), dispose: stop, typos: [['metre', 'meter'], ['consumer', 'consumers']] },
]

const ERROR_CLASS = 'an error class: made by idem, its options are Error\'s own ({ cause })'
const NO_OPTIONS = 'takes no options object'

/**
 * Every exported function that is not a target above, and why: it takes no options
 * object (its arguments are values, positional, or none). A new export must be added
 * to one list or the other.
 */
export const NOT_FACTORIES: Record<string, string> = {
  'idem/openapi/nestjs#idempotencyOpenApiDocument': "needs a Nest app; its OpenAPI options go through the same check as idem/openapi's (tested above)",
  'idem#assertValidKey': 'checks a key value',
  'idem#createEventStream': NO_OPTIONS,
  'idem#deriveKey': 'three strings',
  'idem#discard': 'wraps a value',
  'idem#isDiscarded': 'tests a value',
  'idem#fingerprintValue': 'hashes JSON data: its fields are the input, not options',
  ...Object.fromEntries(
    ['BodyTooLargeError', 'CorruptBodyError', 'FingerprintMismatchError', 'IdemError', 'InFlightError', 'InvalidKeyError', 'InvalidOptionError', 'LeaseLostError', 'MigrationRequiredError', 'MissingKeyError', 'OutcomeNotSerializableError', 'OutcomeTooLargeError', 'OutcomeUnreadableError', 'OverranError', 'StoreUnavailableError', 'UnsupportedEncodingError', 'RouteHijackedError'].map((name) => [`idem#${name}`, ERROR_CLASS]),
  ),
  'idem/fastify#RouteHijackedError': ERROR_CLASS,
  'idem/koa#RouteHijackedError': ERROR_CLASS,
  'idem/fetch#largestStoredBody': 'a number of bytes',
  'idem/sqlite#openSqlite': 'a file name',
  'idem/queue#idFromBytes': 'the bytes of an id',
  'idem/queue/bullmq#bullmqMessageId': 'a BullMQ job',
  'idem/postgres#fromPg': 'wraps a client',
  'idem/mysql#mysqlMigrationScript': 'a version',
  'idem/mysql#fromKysely': 'wraps a transaction',
  'idem/mysql#fromDrizzle': 'wraps a transaction and its sql tag',
  'idem/postgres#postgresMigrationScript': 'a schema and a version',
  'idem/sqlite#sqliteMigrationScript': 'a version',
  'idem/postgres#fromKysely': 'wraps a transaction',
  'idem/postgres#fromDrizzle': 'wraps a transaction and its sql tag',
  'idem/memory#memoryStore': NO_OPTIONS,
  'idem/memory#memoryLeasedStore': NO_OPTIONS,
  'idem/testing#keyStoreContract': 'takes a harness getter; a wrong harness fails its cases',
  'idem/testing#leasedStoreContract': 'takes a harness getter; a wrong harness fails its cases',
  'idem/testing#inboxTableContract': 'takes a harness getter; a wrong harness fails its cases',
  'idem/testing#outboxTableContract': 'takes a harness getter; a wrong harness fails its cases',
  'idem/testing#onceTableContract': 'takes a harness getter; a wrong harness fails its cases',
  'idem/testing#seededRandom': 'a seed',
  'idem/data#contentId': 'content parts',
  'idem/client#isReplayed': 'response headers',
  'idem/client#keyFromIntent': 'a namespace and parts',
  'idem/client#mintKey': NO_OPTIONS,
  'idem/client#parseRetryAfter': 'a header value and a time',
  'idem/client#serializeKeyHeader': 'a key',
  ...Object.fromEntries(
    ['DeadlineExceededError', 'IdemClientError', 'InvalidKeyError', 'InvalidOptionError', 'ProblemError', 'RetriesExhaustedError'].map((name) => [`idem/client#${name}`, ERROR_CLASS]),
  ),
  'idem/fetch#defaultStoreStatus': 'a status',
  'idem/fetch#deleteResponse': NO_OPTIONS,
  'idem/fetch#problemResponse': 'an error and the problem types (a URI or a function)',
  'idem/fetch#problemStatus': 'an error',
  'idem/fetch#problemType': 'a code and the problem types',
  'idem/fetch#routingPath': 'a path',
  'idem/fetch#BodyTooLargeError': ERROR_CLASS,
  'idem/fetch#CorruptBodyError': ERROR_CLASS,
  'idem/fetch#UnsupportedEncodingError': ERROR_CLASS,
  'idem/nestjs#idempotencyContext': 'a request',
  'idem/nestjs#Idem': 'a parameter decorator',
  'idem/nestjs#IdempotencyTx': 'a parameter decorator',
  'idem/queue#handleDelivery': 'positional arguments, what startConsumer resolved',
  'idem/queue#messageKey': 'a message id',
  'idem/queue/redis-streams#streamEntries': 'a Redis reply',
  'idem/redis#redisKeys': 'a prefix, scope and key',
  'idem/redis#redisInboxKeys': 'a prefix, consumer and key',
  'idem/redis#redisInboxKey': 'a name and key',
  'idem/metrics#prometheusNames': 'a prefix',
}
