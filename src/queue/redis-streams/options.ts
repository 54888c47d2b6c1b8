/** The one method the adapter needs: ioredis's `call`. */
export interface RedisCaller {
  /** Sends one command with its arguments and resolves with Redis's reply. */
  call(command: string, ...args: (string | number)[]): Promise<unknown>
}

/** A client that can open a second connection for blocking reads (ioredis's `duplicate`). */
export interface RedisClient extends RedisCaller {
  /** A second connection with the same settings. */
  duplicate(): RedisCaller & {
    /** Closes that connection. */
    disconnect(): void
  }
}

/**
 * What `redisStreamSource` takes: the client, the stream, the group and consumer, the claim of
 * stalled entries and the dead-letter stream.
 */
export interface RedisStreamSourceOptions {
  redis: RedisClient
  stream: string
  group: string
  /** This instance's name in the group; unique per process. */
  consumer: string
  /** Entries read (and handled concurrently) per round. @default 20 */
  count?: number
  /** How long one read waits for new entries. @default 1000 */
  blockMs?: number
  /** An entry pending this long without an ack is taken over (its consumer is presumed dead). @default 30000 */
  claimIdleMs?: number
  /** How often to look for entries to take over. @default 1000 */
  claimEveryMs?: number
  /** The field holding the message id. @default 'id' */
  idField?: string
  /** The field holding the body. @default 'body' */
  bodyField?: string
  /** Where dead letters are copied. `null` to only acknowledge them. @default `${stream}:dead` */
  deadLetterStream?: string | null
  /** Where a new group starts reading: `0` (the whole stream) or `$` (only new entries). @default '0' */
  startId?: string
  /** Errors of the read loop (a dropped connection); the loop backs off and goes on. @default a `warning` event (`source-read-error`) on `idemEvents`, which goes to the console when nobody listens */
  onError?: (error: unknown) => void
}
