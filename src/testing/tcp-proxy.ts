import net from 'node:net'
import { InvalidOptionError } from '../core/errors/invalid-option.js'
import { assertCount, assertDuration, assertKnownOptions, optionNames } from '../core/errors/option-checks.js'

/** Options of `startTcpFaultProxy`. */
export interface TcpFaultProxyOptions {
  /** The real server, as `host:port` on a loopback address, e.g. `127.0.0.1:5432`. */
  target: string
  /** The most client connections relayed at once; one more is closed as soon as it is accepted. @default 64 */
  maxConnections?: number
  /** How long to wait for the target to accept before closing the client's connection. @default 10_000 */
  connectTimeoutMs?: number
}

/** What the proxy did, counted since it started. */
export interface TcpFaultProxyStats {
  /** Client connections relayed to the target. */
  accepted: number
  /** Client connections closed at once: while refusing, over `maxConnections`, or the target would not accept. */
  refused: number
  /** Connections destroyed by `cut()`. */
  cut: number
}

/** A running TCP fault proxy. */
export interface TcpFaultProxy {
  /** Always `127.0.0.1`. */
  readonly host: string
  /** The port to point the client at instead of the target's. */
  readonly port: number
  /** Connections open through the proxy now. */
  readonly open: number
  /** A snapshot of the counters. */
  readonly stats: TcpFaultProxyStats
  /**
   * Destroys every open connection, both sides at once, as a network cut or a failover
   * does: the client sees its connection end (or, with `reset`, ECONNRESET) and the
   * server sees its client vanish and rolls back whatever transaction was open.
   * New connections are relayed as before (see `refuse`).
   * @param options.reset send RST instead of closing (FIN): the client gets a socket error rather than an end
   * @returns how many connections were cut
   */
  cut(options?: { reset?: boolean }): number
  /** While true, new connections are closed as soon as they are accepted (the server is unreachable); open ones are left alone. */
  refuse(refusing: boolean): void
  /** Stops listening, cuts every open connection and waits until the port is free. */
  close(): Promise<void>
}

/** A client's connection and the proxy's to the target, relayed both ways. */
interface Pair {
  client: net.Socket
  server: net.Socket
}

/** Relays `client` to the target until either side goes, counting it in `stats`: a relay holds no half-open connection. */
function relay(client: net.Socket, upstream: { host: string; port: number }, connectTimeoutMs: number, open: Set<Pair>, stats: TcpFaultProxyStats): void {
  const server = net.connect({ host: upstream.host, port: upstream.port })
  const pair = { client, server }
  open.add(pair)
  let connected = false
  const timer = setTimeout(() => end(), connectTimeoutMs)
  // Either side going away takes the other with it.
  const end = (): void => {
    clearTimeout(timer)
    if (!open.delete(pair)) return
    if (!connected) stats.refused++
    client.destroy()
    server.destroy()
  }
  server.once('connect', () => {
    clearTimeout(timer)
    connected = true
    stats.accepted++
  })
  client.pipe(server)
  server.pipe(client)
  for (const socket of [client, server]) {
    socket.on('error', end)
    socket.on('close', end)
  }
}

const LOOPBACK_HOSTS = new Set(['localhost', '::1', '[::1]'])

const OPTIONS = optionNames<TcpFaultProxyOptions>({ target: true, maxConnections: true, connectTimeoutMs: true })

/**
 * A TCP relay on 127.0.0.1 in front of a real server (Postgres, Redis, a broker) that
 * lets a test kill connections on purpose: `cut()` destroys every open connection in
 * the middle of whatever it carries, `refuse(true)` turns new ones away. This is the
 * failure behind a failover or a network partition, which `pg_terminate_backend` does
 * not reproduce (the server says goodbye there; here nobody does). Bounded: loopback
 * targets only, a limited number of connections, a connect timeout. A `node:net`
 * server: Node only.
 *
 * @example
 * import { startTcpFaultProxy } from 'idem/testing'
 * const proxy = await startTcpFaultProxy({ target: '127.0.0.1:5432' })
 * const pool = new pg.Pool({ host: proxy.host, port: proxy.port, user: 'postgres', database: 'test' })
 * pool.on('error', () => {}) // idle clients die with the cut too; that one is the pool's
 * await idem.run({ scope, key, input }, async (tx) => {
 *   await tx.query('INSERT INTO orders (id) VALUES ($1)', [id])
 *   proxy.cut() // the transaction dies here: the call fails with StoreUnavailableError
 * })
 * await proxy.close()
 */
export async function startTcpFaultProxy(options: TcpFaultProxyOptions): Promise<TcpFaultProxy> {
  assertKnownOptions('startTcpFaultProxy', options, OPTIONS)
  const { target, maxConnections = 64, connectTimeoutMs = 10_000 } = options
  const upstream = loopbackTarget(target)
  assertCount('startTcpFaultProxy: option "maxConnections"', maxConnections, 1, 10_000)
  assertDuration('startTcpFaultProxy: option "connectTimeoutMs"', connectTimeoutMs, 1)
  const stats: TcpFaultProxyStats = { accepted: 0, refused: 0, cut: 0 }
  const open = new Set<Pair>()
  let refusing = false

  const proxy = net.createServer((client) => {
    if (refusing || open.size >= maxConnections) {
      stats.refused++
      client.destroy()
      return
    }
    relay(client, upstream, connectTimeoutMs, open, stats)
  })
  await new Promise<void>((resolve, reject) => {
    proxy.once('error', reject)
    proxy.listen(0, '127.0.0.1', () => resolve())
  })
  const { port } = proxy.address() as net.AddressInfo

  function cut({ reset = false }: { reset?: boolean } = {}): number {
    if (typeof reset !== 'boolean') throw new InvalidOptionError('cut: option "reset" must be a boolean')
    const pairs = [...open]
    open.clear()
    for (const { client, server } of pairs) {
      for (const socket of [client, server]) {
        if (reset && !socket.destroyed) socket.resetAndDestroy()
        else socket.destroy()
      }
    }
    stats.cut += pairs.length
    return pairs.length
  }

  return {
    host: '127.0.0.1',
    port,
    get open() {
      return open.size
    },
    get stats() {
      return { ...stats }
    },
    cut,
    refuse(on: boolean) {
      if (typeof on !== 'boolean') throw new InvalidOptionError('refuse: "refusing" must be a boolean')
      refusing = on
    },
    close() {
      return new Promise<void>((resolve) => {
        proxy.close(() => resolve())
        cut()
      })
    },
  }
}

function loopbackTarget(target: string): { host: string; port: number } {
  const match = typeof target === 'string' ? /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(target) : null
  if (match === null) {
    throw new InvalidOptionError(`startTcpFaultProxy: option "target" must be "host:port", got ${JSON.stringify(target)}`)
  }
  const host = match[1]!
  // Cutting connections on purpose is for local test servers only.
  if (!LOOPBACK_HOSTS.has(host) && !/^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host)) {
    throw new InvalidOptionError(`startTcpFaultProxy: option "target" must be on a loopback address (127.x.x.x, localhost, [::1]), got ${JSON.stringify(target)}`)
  }
  const port = Number(match[2])
  assertCount('startTcpFaultProxy: the port of option "target"', port, 1, 65_535)
  return { host: host.replace(/^\[|\]$/g, ''), port }
}
