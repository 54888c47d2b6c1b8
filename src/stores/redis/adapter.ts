import { createHash } from 'node:crypto'
import { InvalidOptionError } from '../../core/errors/invalid-option.js'
import { ioRedisTransport } from './ioredis.js'
import { nodeRedisClusterTransport, nodeRedisTransport } from './node-redis.js'
import { serverTraits, type ServerTraits } from './server-traits.js'
import type { RawSend, Transport } from './transport.js'
import type { IoRedisClient, NodeRedisClient, NodeRedisCluster } from './types.js'

/** A Lua script and its SHA1, under which the server caches it. */
export interface Script {
  readonly lua: string
  readonly sha: string
}

/** A script, with the SHA1 that `EVALSHA` names it by. */
export function script(lua: string): Script {
  return { lua, sha: createHash('sha1').update(lua).digest('hex') }
}

/** A write a later call relies on: one command (with the key that routes it on a Cluster), or a script. */
export type Write =
  | { readonly command: readonly string[]; readonly key: string }
  | { readonly script: Script; readonly keys: readonly string[]; readonly args: readonly string[] }

/**
 * The one interface the Redis store talks to, whichever client it was given: commands as
 * arrays of strings, replies as the client decodes them (strings, numbers, arrays, null).
 */
export interface RedisAdapter {
  /** The client's own timeout of every command, when it has one (a standalone ioredis `commandTimeout`). */
  readonly commandTimeoutMs: number | undefined
  /** The server's traits once `serverTraits()` has answered. */
  readonly traits: ServerTraits | undefined
  /** The client's own send method (see `Caller`). */
  readonly raw: RawSend
  /** Sends one command; `key`, its first key, routes it on a Cluster. */
  send(command: string[], key?: string): Promise<unknown>
  /**
   * A write followed by `WAIT replicas timeoutMs` in one round trip on the connection
   * that wrote (on a Cluster: the master of its key): its reply and how many replicas
   * acknowledged it. A script the server lost goes again as `EVAL` with a `WAIT` of its own.
   */
  waited(write: Write, replicas: number, timeoutMs: number): Promise<[reply: unknown, acks: number]>
  /**
   * The server's version and features, read once per client (`INFO server` of every
   * master) at its first use; a failure to ask is not remembered.
   * @throws InvalidOptionError when a server is older than Redis 7.0
   */
  serverTraits(): Promise<ServerTraits>
}

/** The clients the store takes, as its errors name them. */
const SUPPORTED_CLIENTS =
  'an ioredis (5 or 6) or iovalkey Redis or Cluster, or a node-redis (redis 4, 5 or 6) createClient() or createCluster() client'

// One adapter per client: its server check runs once, however many stores share it.
const adapters = new WeakMap<object, RedisAdapter>()

/**
 * The adapter of a client, told apart by shape.
 * @throws InvalidOptionError naming `option` and the clients the store takes
 */
export function redisAdapter(client: unknown, option: string): RedisAdapter {
  if (client === null || typeof client !== 'object') throw new InvalidOptionError(`${option} must be ${SUPPORTED_CLIENTS}`)
  let adapter = adapters.get(client)
  if (adapter === undefined) {
    adapter = new Adapter(transportOf(client, option))
    adapters.set(client, adapter)
  }
  return adapter
}

function transportOf(client: object, option: string): Transport {
  const has = (name: string): boolean => typeof (client as Record<string, unknown>)[name] === 'function'
  if (has('call') && has('pipeline') && 'isCluster' in client) return ioRedisTransport(client as IoRedisClient)
  if (has('sendCommand') && has('getSlotMaster') && has('nodeClient') && has('getMasters')) return nodeRedisClusterTransport(client as NodeRedisCluster)
  // A node-redis pool (createClientPool) sends each command on any of its connections:
  // a WAIT would not follow its write.
  if (has('sendCommand') && has('multi') && !('idleClients' in client)) return nodeRedisTransport(client as NodeRedisClient)
  throw new InvalidOptionError(`${option} must be ${SUPPORTED_CLIENTS}`)
}

class Adapter implements RedisAdapter {
  readonly commandTimeoutMs: number | undefined
  readonly #transport: Transport
  #traits: ServerTraits | undefined
  #asked: Promise<ServerTraits> | undefined

  constructor(transport: Transport) {
    this.#transport = transport
    this.commandTimeoutMs = transport.commandTimeoutMs
  }

  get traits(): ServerTraits | undefined {
    return this.#traits
  }

  get raw(): RawSend {
    return this.#transport.raw
  }

  send(command: string[], key?: string): Promise<unknown> {
    return this.#transport.send(command, key)
  }

  async waited(write: Write, replicas: number, timeoutMs: number): Promise<[unknown, number]> {
    const wait = ['WAIT', String(replicas), String(timeoutMs)]
    if ('command' in write) return await this.#sendThenWait([...write.command], write.key, wait)
    const key = write.keys[0]!
    try {
      return await this.#sendThenWait(evalsha(write.script, write.keys, write.args), key, wait)
    } catch (error) {
      if (!isNoScript(error)) throw error
      return await this.#sendThenWait(evalScript(write.script, write.keys, write.args), key, wait)
    }
  }

  /**
   * A write and its WAIT. A Cluster client follows MOVED and ASK for a command of its
   * own, not for one of a pipeline whose WAIT succeeded: a read of the key through the
   * client makes it learn where the slot went, and the write (which did not run) goes
   * there once.
   */
  async #sendThenWait(command: string[], key: string, wait: string[]): Promise<[unknown, number]> {
    try {
      return acknowledged(await this.#transport.sendThenWait(command, key, wait))
    } catch (error) {
      if (!(error instanceof Error && /^(MOVED|ASK) /.test(error.message))) throw error
      await this.#transport.send(['PTTL', key], key).catch(() => {})
      return acknowledged(await this.#transport.sendThenWait(command, key, wait))
    }
  }

  serverTraits(): Promise<ServerTraits> {
    this.#asked ??= this.#transport.infos().then(
      (infos) => (this.#traits = serverTraits(infos)),
      (error: unknown) => {
        // Unreachable now is not an answer: the next use asks again.
        this.#asked = undefined
        throw error
      },
    )
    return this.#asked
  }
}

function acknowledged([reply, acks]: [unknown, unknown]): [unknown, number] {
  return [reply, Number(acks)]
}

function evalsha(script: Script, keys: readonly string[], args: readonly string[]): string[] {
  return ['EVALSHA', script.sha, String(keys.length), ...keys, ...args]
}

function evalScript(script: Script, keys: readonly string[], args: readonly string[]): string[] {
  return ['EVAL', script.lua, String(keys.length), ...keys, ...args]
}

function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT')
}
