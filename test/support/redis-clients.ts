// Every Redis client the Redis store takes, made the same way, so that one test runs on
// each: ioredis and iovalkey (Redis, Cluster), node-redis 4, 5 and 6 (createClient,
// createCluster). The dev dependencies `redis4` and `redis5` are npm aliases of redis@4
// and redis@5; `redis` is 6.
import { Cluster as IoCluster, Redis as IoRedis } from 'ioredis'
import { Cluster as ValkeyCluster, Redis as ValkeyRedis } from 'iovalkey'
import * as redis4 from 'redis4'
import * as redis5 from 'redis5'
import * as redis6 from 'redis'
import type { RedisClient } from '../../src/stores/redis/index.js'

/** One client library, as the tests make its clients. */
export interface RedisClientKind {
  /** `ioredis`, `iovalkey`, `node-redis 4`, `node-redis 5`, `node-redis 6`. */
  readonly name: string
  /** A client on one server, connected. */
  connect(url: string): Promise<RedisClient>
  /** A client on a Cluster, connected. */
  cluster(seeds: ReadonlyArray<{ host: string; port: number }>): Promise<RedisClient>
  /** A client of a server nobody listens for (port 1), trying to connect: its commands wait or fail. */
  unreachable(): RedisClient
}

/** The client kinds, and `close` for every client they made. */
export interface RedisClients {
  readonly kinds: readonly RedisClientKind[]
  /** The kinds whose name is in `names`. */
  only(...names: string[]): RedisClientKind[]
  close(): Promise<void>
}

interface Closable {
  disconnect?(): unknown
  destroy?(): unknown
}

interface Quiet {
  on(event: 'error', listener: (error: unknown) => void): unknown
}

/** Errors are the store's to report, through its calls: a client's own 'error' events would crash the run. */
function quiet<T extends Quiet>(client: T): T {
  client.on('error', () => {})
  return client
}

interface IoFactories {
  redis(url: string, options: { maxRetriesPerRequest?: number; lazyConnect?: boolean }): RedisClient & Closable & Quiet
  cluster(seeds: Array<{ host: string; port: number }>): RedisClient & Closable & Quiet
}

interface NodeFactories {
  client(url: string, socket?: { reconnectStrategy: (retries: number) => number }): { client: RedisClient; connect(): Promise<unknown> }
  cluster(rootNodes: Array<{ url: string }>): { client: RedisClient; connect(): Promise<unknown> }
}

const UNREACHABLE = 'redis://127.0.0.1:1'

/** The client kinds of one test file: `close()` in its `afterAll`. */
export function redisClients(): RedisClients {
  const made: Closable[] = []
  const keep = <T extends Closable>(client: T): T => {
    made.push(client)
    return client
  }
  const ioKind = (name: string, make: IoFactories): RedisClientKind => ({
    name,
    async connect(url) {
      return keep(quiet(make.redis(url, { maxRetriesPerRequest: 1 })))
    },
    async cluster(seeds) {
      return keep(quiet(make.cluster([...seeds])))
    },
    unreachable() {
      return keep(quiet(make.redis(UNREACHABLE, { lazyConnect: true })))
    },
  })
  const nodeKind = (name: string, make: NodeFactories): RedisClientKind => ({
    name,
    async connect(url) {
      const { client, connect } = make.client(url)
      await connect()
      return client
    },
    async cluster(seeds) {
      const { client, connect } = make.cluster(seeds.map(({ host, port }) => ({ url: `redis://${host}:${port}` })))
      await connect()
      return client
    },
    unreachable() {
      const { client, connect } = make.client(UNREACHABLE, { reconnectStrategy: (retries: number) => Math.min(50 * retries, 500) })
      connect().catch(() => {})
      return client
    },
  })
  // Each library's own factories, so that the type checker sees each one's clients are RedisClients.
  const node = <C extends RedisClient & Closable & Quiet & { connect(): Promise<unknown> }>(client: C) => {
    keep(quiet(client))
    return { client, connect: () => client.connect() }
  }
  const kinds = [
    ioKind('ioredis', { redis: (url, options) => new IoRedis(url, options), cluster: (seeds) => new IoCluster(seeds, { scaleReads: 'master' }) }),
    ioKind('iovalkey', { redis: (url, options) => new ValkeyRedis(url, options), cluster: (seeds) => new ValkeyCluster(seeds, { scaleReads: 'master' }) }),
    nodeKind('node-redis 4', { client: (url, socket) => node(redis4.createClient({ url, socket })), cluster: (rootNodes) => node(redis4.createCluster({ rootNodes })) }),
    nodeKind('node-redis 5', { client: (url, socket) => node(redis5.createClient({ url, socket })), cluster: (rootNodes) => node(redis5.createCluster({ rootNodes })) }),
    nodeKind('node-redis 6', { client: (url, socket) => node(redis6.createClient({ url, socket })), cluster: (rootNodes) => node(redis6.createCluster({ rootNodes })) }),
  ]
  return {
    kinds,
    only: (...names) => kinds.filter((kind) => names.includes(kind.name)),
    async close() {
      for (const client of made.splice(0)) {
        try {
          // node-redis 5 and 6 destroy; ioredis and node-redis 4 disconnect.
          await (typeof client.destroy === 'function' ? client.destroy() : client.disconnect?.())
        } catch {
          // Closed already.
        }
      }
    },
  }
}
