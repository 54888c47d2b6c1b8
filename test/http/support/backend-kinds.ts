// The conformance table's backends, built from a kit of store constructors that is
// passed in: idem's sources under vitest (backends.ts), the built package under Bun and
// Deno (test/runtimes/slice). Nothing here imports a store or an SQLite driver itself,
// so the same backends run on every runtime against the code that runtime loads; nor,
// until a DynamoDB backend is made, the AWS SDK, which the slice does not run.
import { Redis } from 'ioredis'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import type { createLeasedIdem, StepContext } from '../../../src/index.js'
import type { IdempotencyOptions } from '../../../src/http/options.js'
import type { dynamodbStore } from '../../../src/stores/dynamodb/index.js'
import type { postgresStore, PgClient } from '../../../src/stores/postgres/index.js'
import type { redisStore } from '../../../src/stores/redis/index.js'
import type { sqliteStore, SqliteDatabase } from '../../../src/stores/sqlite/index.js'
import { testRedis } from '../../leased/support.js'
import { testSchema } from '../../support/postgres.js'

/** What the middleware protects a route with: the backend's store, or an engine on it. */
export type Protection<Tx> = Pick<IdempotencyOptions<Tx>, 'store' | 'idem'>

/** A real backend plus what the tests need to look behind it: effect rows and key rows. */
export interface Backend<Tx = unknown> {
  name: 'postgres' | 'sqlite' | 'mysql' | 'redis' | 'dynamodb'
  /** The middleware's `store` (transactional backends) or `idem` (a leased engine); with `down`, over a backend that is unreachable. */
  protection(down?: 'down'): Protection<Tx>
  /**
   * Whether a failed request's effect is undone with it. Transactional backends roll it
   * back; in leased mode (Redis, DynamoDB) it stays, written once: the route writes it idempotently,
   * by the call's derived key, as docs/leased.md prescribes, so the retry adds nothing.
   */
  rollsBack: boolean
  /** Writes one effect tagged `id` through the request's transaction (or, leased, its step context). */
  writeEffect(tx: Tx, id: string): Promise<void>
  countEffects(id: string): Promise<number>
  /** Stored keys (keys with an outcome): all of them, or those equal to `key`. */
  countKeys(key?: string): Promise<number>
  close(): Promise<void>
}

/** The store constructors a backend is built from, as `idem`, `idem/postgres`, `idem/sqlite` and `idem/redis` export them. */
export interface StoreKit {
  postgresStore: typeof postgresStore
  sqliteStore: typeof sqliteStore
  redisStore: typeof redisStore
  createLeasedIdem: typeof createLeasedIdem
}

/**
 * The constructors the DynamoDB backend is built from, as `idem` and `idem/dynamodb`
 * export them. Apart from `StoreKit`: the Bun and Deno slice, whose kit is a `StoreKit`,
 * runs the table without DynamoDB (test/runtimes/subpaths.test.ts runs `idem/dynamodb`
 * on them, docs/runtimes.md).
 */
export interface DynamoKit {
  dynamodbStore: typeof dynamodbStore
  createLeasedIdem: typeof createLeasedIdem
}

/** An open SQLite database of any driver the store takes (better-sqlite3, bun:sqlite, node:sqlite). */
export type SqliteHandle = SqliteDatabase & { close(): void }

/** Postgres in a schema of its own; undefined when Postgres is unreachable outside CI. */
export async function postgresBackendOf(kit: StoreKit, prefix: string): Promise<(Backend<PgClient> & { store: ReturnType<StoreKit['postgresStore']> }) | undefined> {
  const db = await testSchema(prefix, 12)
  if (db === undefined) return undefined
  const { pool, schema } = db
  const store = kit.postgresStore({ pool, schema })
  await store.migrate()
  await pool.query(`CREATE TABLE "${schema}".effects (id text NOT NULL)`)
  const down = new pg.Pool({ connectionString: 'postgres://postgres@127.0.0.1:1/test', connectionTimeoutMillis: 2_000 })
  down.on('error', () => {})
  // Nothing listens on port 1: connecting is refused at once.
  const downStore = kit.postgresStore({ pool: down, schema })
  return {
    name: 'postgres',
    store,
    protection: (state) => ({ store: state === 'down' ? downStore : store }),
    rollsBack: true,
    async writeEffect(tx, id) {
      await tx.query(`INSERT INTO "${schema}".effects (id) VALUES ($1)`, [id])
    },
    async countEffects(id) {
      const { rows } = await pool.query(`SELECT count(*)::int AS n FROM "${schema}".effects WHERE id = $1`, [id])
      return rows[0].n as number
    },
    async countKeys(key) {
      const { rows } =
        key === undefined
          ? await pool.query(`SELECT count(*)::int AS n FROM "${schema}".idem_keys`)
          : await pool.query(`SELECT count(*)::int AS n FROM "${schema}".idem_keys WHERE key = $1`, [key])
      return rows[0].n as number
    },
    async close() {
      await down.end()
      await db.drop()
    },
  }
}

/** SQLite in a temporary file of its own, in WAL mode, opened with `open` (the driver under test). */
export function sqliteBackendOf(kit: StoreKit, prefix: string, open: (file: string) => SqliteHandle): Backend<SqliteDatabase> & { store: ReturnType<StoreKit['sqliteStore']> } {
  const dir = mkdtempSync(join(tmpdir(), `${prefix}-`))
  const db = open(join(dir, 'http.db'))
  db.exec('PRAGMA journal_mode = WAL')
  const store = kit.sqliteStore({ db })
  store.migrate()
  db.exec('CREATE TABLE effects (id TEXT NOT NULL)')
  const effects = db.prepare('SELECT count(*) AS n FROM effects WHERE id = ?')
  const keys = db.prepare('SELECT count(*) AS n FROM idem_keys WHERE key = ?')
  const allKeys = db.prepare('SELECT count(*) AS n FROM idem_keys')
  const closed = open(join(dir, 'closed.db'))
  const downStore = kit.sqliteStore({ db: closed })
  downStore.migrate()
  closed.close()
  return {
    name: 'sqlite',
    store,
    protection: (state) => ({ store: state === 'down' ? downStore : store }),
    rollsBack: true,
    async writeEffect(tx, id) {
      tx.prepare('INSERT INTO effects (id) VALUES (?)').run(id)
    },
    countEffects: async (id) => (effects.get(id) as { n: number }).n,
    countKeys: async (key) => ((key === undefined ? allKeys.get() : keys.get(key)) as { n: number }).n,
    async close() {
      db.close()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/**
 * Redis in a key prefix of its own, through the leased engine (the route's `tx` is the
 * step context); undefined when Redis is unreachable outside CI. The route's effect is
 * a member of a set per id, named by the call's derived key: written again by a retry,
 * it is still one.
 */
export async function redisBackendOf(kit: StoreKit, label: string): Promise<Backend<StepContext> | undefined> {
  const redis = await testRedis(label)
  if (redis === undefined) return undefined
  const { client, prefix } = redis
  const idem = kit.createLeasedIdem({ store: kit.redisStore({ client, prefix }) })
  // Nothing listens on port 1: every command fails within the store's timeout.
  const unreachable = new Redis(1, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null })
  unreachable.on('error', () => {})
  const downIdem = kit.createLeasedIdem({ store: kit.redisStore({ client: unreachable, prefix, timeoutMs: 500 }) })
  const effects = (id: string): string => `${prefix}effects:${id}`
  return {
    name: 'redis',
    protection: (state) => ({ idem: state === 'down' ? downIdem : idem }),
    rollsBack: false,
    async writeEffect(tx, id) {
      await client.sadd(effects(id), tx.derive('effect'))
    },
    countEffects: (id) => client.scard(effects(id)),
    async countKeys(key) {
      // A claim is `<prefix>{<scope>:<key>}:claim` (scope and key with `%{}:` percent-encoded).
      const pattern = key === undefined ? `${prefix}{*}:claim` : `${prefix}{*:${key.replace(/[%{}:]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)}}:claim`
      const claims: string[] = []
      let cursor = '0'
      do {
        // The test Redis is shared: large steps, so that a crowded keyspace costs few round trips.
        const [next, names] = await client.scan(cursor, 'MATCH', pattern, 'COUNT', 10_000)
        claims.push(...names)
        cursor = next
      } while (cursor !== '0')
      // A completed claim is the string `3c …` (protocol v3, see src/stores/redis/scripts.ts).
      const values = claims.length === 0 ? [] : await Promise.all(claims.map((name) => client.get(name)))
      return values.filter((value) => value?.startsWith('3c ')).length
    },
    async close() {
      unreachable.disconnect()
      await redis.drop()
    },
  }
}

/** The partition key of the effects of the requests with idempotency key `id` (see `dynamoBackendOf`). */
const effectsPk = (id: string): string => `conformance-effect#${id}`

/**
 * DynamoDB (DynamoDB Local) in a table of its own, through the leased engine (the
 * route's `tx` is the step context); undefined when DynamoDB Local is unreachable
 * outside CI.
 *
 * The route's effect is an item of that same table, written with a conditional put
 * keyed by the call's derived key (`pk = conformance-effect#<id>`, `sk = <derived key>`):
 * written again by a retry, or late by a route past its deadline, it is still one. The
 * same table because its key schema (`pk`/`sk` strings) takes it without meeting idem's
 * items: idem's partition keys are `lease#`, `inbox#`, `once#` and `dead#` followed by a
 * hash, never `conformance-effect#`, and dropping the table drops the effects with it.
 */
export async function dynamoBackendOf(kit: DynamoKit, label: string): Promise<Backend<StepContext> | undefined> {
  // Loaded when called, not imported above, so that the Bun and Deno slice, which
  // imports this module, never loads the AWS SDK.
  const [{ testDynamo, localClient }, { PutItemCommand, QueryCommand, ScanCommand }] = await Promise.all([
    import('../../support/dynamodb.js'),
    import('@aws-sdk/client-dynamodb'),
  ])
  const dynamo = await testDynamo(label, kit.dynamodbStore)
  if (dynamo === undefined) return undefined
  const { client, table, store } = dynamo
  const idem = kit.createLeasedIdem({ store })
  // Nothing listens on port 1: the one attempt is refused at once, within the store's timeout.
  const unreachable = localClient('http://127.0.0.1:1', 1)
  const downIdem = kit.createLeasedIdem({ store: kit.dynamodbStore({ client: unreachable, table, timeoutMs: 500 }) })

  /** How many items a Query or Scan matches, page by page, read consistently. */
  async function count(command: (start: Record<string, unknown> | undefined) => object): Promise<number> {
    let n = 0
    let start: Record<string, unknown> | undefined
    do {
      const page = (await client.send(command(start) as never)) as { Count?: number; LastEvaluatedKey?: Record<string, unknown> }
      n += page.Count ?? 0
      start = page.LastEvaluatedKey
    } while (start !== undefined)
    return n
  }

  return {
    name: 'dynamodb',
    protection: (state) => ({ idem: state === 'down' ? downIdem : idem }),
    rollsBack: false,
    async writeEffect(tx, id) {
      try {
        await client.send(
          new PutItemCommand({
            TableName: table,
            Item: { pk: { S: effectsPk(id) }, sk: { S: tx.derive('effect') }, id: { S: id } },
            ConditionExpression: 'attribute_not_exists(pk)',
          }),
        )
      } catch (error) {
        // Written before, by this call's earlier run: the effect is there once.
        if ((error as Error).name !== 'ConditionalCheckFailedException') throw error
      }
    },
    countEffects: (id) =>
      count(
        (start) =>
          new QueryCommand({
            TableName: table,
            ConsistentRead: true,
            Select: 'COUNT',
            KeyConditionExpression: 'pk = :pk',
            ExpressionAttributeValues: { ':pk': { S: effectsPk(id) } },
            ExclusiveStartKey: start as never,
          }),
      ),
    countKeys: (key) =>
      // A claim is the item `sk = '#'` under `pk = lease#<hash of scope and key>`; it keeps
      // the key in `key` and is completed when `state` is (src/stores/dynamodb/leased.ts).
      count(
        (start) =>
          new ScanCommand({
            TableName: table,
            ConsistentRead: true,
            Select: 'COUNT',
            FilterExpression: `begins_with(pk, :lease) AND sk = :head AND #state = :completed${key === undefined ? '' : ' AND #key = :key'}`,
            ExpressionAttributeNames: { '#state': 'state', ...(key === undefined ? {} : { '#key': 'key' }) },
            ExpressionAttributeValues: {
              ':lease': { S: 'lease#' },
              ':head': { S: '#' },
              ':completed': { S: 'completed' },
              ...(key === undefined ? {} : { ':key': { S: key } }),
            },
            ExclusiveStartKey: start as never,
          }),
      ),
    async close() {
      unreachable.destroy()
      await dynamo.drop()
    },
  }
}
