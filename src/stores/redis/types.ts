/**
 * The part of an ioredis client the store uses, typed by shape so that idem does not
 * depend on ioredis' types: an ioredis `Redis` or `Cluster` (v5 or v6) fits.
 * `defineCommand` registers a Lua script as a method that sends `EVALSHA` and falls
 * back to `EVAL` when the server has lost its script cache (a restart without
 * persistence, `SCRIPT FLUSH`, a failover).
 */
export interface RedisClient {
  /** Registers `lua` as a command method named `name` on the client. */
  defineCommand(name: string, definition: { lua: string; numberOfKeys?: number }): void
  /** Starts a pipeline: needed only with `waitForReplicas`, which sends each write and its `WAIT` in one. */
  pipeline?(): RedisPipeline
}

/** The part of an ioredis pipeline `waitForReplicas` uses: a script and `WAIT`, sent together. */
export interface RedisPipeline {
  /** Queues `EVALSHA sha numKeys ...keysAndArgs`. */
  evalsha(sha: string, numKeys: number, ...keysAndArgs: Array<string | number>): RedisPipeline
  /** Queues `EVAL script numKeys ...keysAndArgs`. */
  eval(script: string, numKeys: number, ...keysAndArgs: Array<string | number>): RedisPipeline
  /** Queues `WAIT numReplicas timeoutMs`. */
  wait(numReplicas: number, timeoutMs: number): RedisPipeline
  /** Sends the queued commands: one `[error, reply]` per command. */
  exec(): Promise<Array<[Error | null, unknown]> | null>
}
