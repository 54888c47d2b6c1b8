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
}
