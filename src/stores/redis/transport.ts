/**
 * What each client does for the store, in its own way: send a command (its own method,
 * bound, `raw`, is what the store's `Caller` sends through), send a write and its `WAIT`
 * together, read every master's `INFO server`. The rest (scripts by SHA1, `MOVED` after a
 * `WAIT`, the server check) is the adapter's (`adapter.ts`) and the caller's, common to
 * every client.
 */
export interface Transport {
  /** The client's own timeout of every command, when it has one. */
  readonly commandTimeoutMs: number | undefined
  /** Sends one command; `key`, its first key, routes it on a Cluster. */
  send(command: string[], key: string | undefined): Promise<unknown>
  /** `command` then `wait`, together, on the connection of `key`'s node: both replies, the command's error first. */
  sendThenWait(command: string[], key: string, wait: string[]): Promise<[unknown, unknown]>
  /** `INFO server` of every master (of the one server). */
  infos(): Promise<string[]>
  /** The client's own send method, bound: what the store's `Caller` sends a command through, with nothing between. */
  readonly raw: RawSend
}

/** A client's own way of sending any command. */
export type RawSend =
  /** ioredis, iovalkey: `call(name, ...args)`, the name in lower case (see `ioredis.ts`). */
  | { readonly kind: 'call'; call(name: string, ...args: string[]): Promise<unknown> }
  /** node-redis: `sendCommand(args)`. */
  | { readonly kind: 'args'; sendCommand(args: string[]): Promise<unknown> }
  /** A node-redis Cluster: `sendCommand(firstKey, isReadonly, args)`. */
  | { readonly kind: 'cluster'; sendCommand(firstKey: string | undefined, isReadonly: boolean | undefined, args: string[]): Promise<unknown> }
