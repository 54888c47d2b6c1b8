/**
 * The Redis clients the store takes, typed by shape so that idem depends on none of
 * their types: an ioredis (v5, v6) or iovalkey `Redis` or `Cluster`, or a node-redis
 * (`redis` 4, 5 or 6) `createClient()` or `createCluster()` client. The store tells
 * them apart by shape when it is made (see `adapter.ts`).
 */
export type RedisClient = IoRedisClient | NodeRedisClient | NodeRedisCluster

/** The part of an ioredis or iovalkey `Redis` or `Cluster` the store uses. */
export interface IoRedisClient {
  /** Sends any command (ioredis routes it by its keys on a Cluster). */
  call(command: string, ...args: string[]): Promise<unknown>
  /** Starts a pipeline: a write and its `WAIT` go in one (`waitForReplicas`). */
  pipeline(): IoRedisPipeline
  /** True for a `Cluster`. */
  readonly isCluster: boolean
  /** A `Cluster`'s masters, each asked for its version. */
  nodes?(role: 'master'): Array<{
    /** Sends one command to that master. */
    call(command: string, ...args: string[]): Promise<unknown>
  }>
}

/** The part of an ioredis pipeline the store uses. */
export interface IoRedisPipeline {
  /** Queues any command. */
  call(command: string, ...args: string[]): IoRedisPipeline
  /** Sends the queued commands: one `[error, reply]` per command. */
  exec(): Promise<Array<[Error | null, unknown]> | null>
}

/** The part of a node-redis `createClient()` client (redis 4, 5 or 6) the store uses. */
export interface NodeRedisClient {
  /** Sends any command. Commands sent in one tick are written to the socket together. */
  sendCommand(args: string[]): Promise<unknown>
}

/** The part of a node-redis `createCluster()` client (redis 4, 5 or 6) the store uses. */
export interface NodeRedisCluster {
  /** Sends any command to the master of `firstKey`'s slot (any node when undefined). */
  sendCommand(firstKey: string | undefined, isReadonly: boolean | undefined, args: string[]): Promise<unknown>
  /** The master serving a slot. */
  getSlotMaster(slot: number): object
  /** The masters it knows. */
  getMasters(): object[]
  /** The client of one node, connected. */
  nodeClient(node: object): NodeRedisClient | Promise<NodeRedisClient>
}
