import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { InvalidOptionError } from '../core/errors/invalid-option.js'
import { assertCount, assertDuration, assertKnownOptions, optionNames } from '../core/errors/option-checks.js'

/** Options of `startFaultProxy`. */
export interface FaultProxyOptions {
  /** The real server to put the proxy in front of, e.g. `http://127.0.0.1:3000`. Loopback only. */
  target: string
  /**
   * Chance, from 0 to 1, that a response is dropped *after* the server answered: the
   * request ran and committed, then the client's connection is destroyed, so the client
   * sees a network error and cannot know whether anything happened. @default 0
   */
  dropResponseProbability?: number
  /** Seed of the PRNG that decides drops, so a run can be repeated. @default 1 */
  seed?: number
  /** Which requests may be dropped (e.g. only POSTs). @default every request */
  droppable?: (request: { method: string; url: string }) => boolean
  /** The largest request or response body relayed; a larger request gets 413, a larger response 502. @default 1 MiB */
  maxBodyBytes?: number
  /** How long to wait for the target's answer before answering 504. @default 30_000 */
  upstreamTimeoutMs?: number
  /** The most connections open to the target at once. @default 64 */
  maxUpstreamSockets?: number
}

/** What the proxy did, counted since it started. */
export interface FaultProxyStats {
  /** Requests the proxy accepted from clients. */
  received: number
  /** Requests relayed to the target that the target answered. */
  forwarded: number
  /** Of those, answers thrown away by destroying the client's connection. */
  dropped: number
  /** Answers passed back to a client still connected. */
  delivered: number
  /**
   * Answers whose client had closed its connection before they came (it gave up on the
   * attempt: a timeout, a cancel): the target ran the request, nobody got its answer.
   * `forwarded` is `dropped + delivered + abandoned`.
   */
  abandoned: number
  /** Requests the target did not answer (refused, reset, timed out, too large). */
  failed: number
}

/** A running fault proxy. */
export interface FaultProxy {
  /** The proxy's base URL (`http://127.0.0.1:<port>`); use it where the client would use the target's. */
  url: string
  /** A snapshot of the counters. */
  readonly stats: FaultProxyStats
  /** Client connections open now. */
  readonly open: number
  /** Stops listening, cuts every open connection and waits until the port is free. */
  close(): Promise<void>
}

// Hop-by-hop headers (RFC 9110 §7.6.1) belong to one connection and are not relayed.
const HOP_BY_HOP = new Set([
  'connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade',
  'proxy-authenticate', 'proxy-authorization', 'content-length', 'host',
])
const LOOPBACK_HOSTS = new Set(['localhost', '[::1]'])

const OPTIONS = optionNames<FaultProxyOptions>({
  target: true, dropResponseProbability: true, seed: true, droppable: true, maxBodyBytes: true, upstreamTimeoutMs: true, maxUpstreamSockets: true,
})

/**
 * An HTTP proxy on 127.0.0.1 that loses responses on purpose: it relays each request to
 * a real server, waits for the server's whole answer (so whatever the server does in
 * its transaction has committed), and then, with probability `dropResponseProbability`
 * decided by a seeded PRNG, destroys the client's connection instead of answering.
 * This is the failure idempotency keys exist for, and what a client must survive by
 * retrying with the same key. Bounded: loopback only, request and response bodies
 * capped, a limited pool of connections to the target, an upstream timeout. A
 * `node:http` server: Node only.
 *
 * @see docs/client.md
 * @example
 * import { startFaultProxy } from 'idem/testing'
 * const proxy = await startFaultProxy({ target: 'http://127.0.0.1:3000', dropResponseProbability: 0.3, seed: 7 })
 * await client.fetch(`${proxy.url}/orders`, { method: 'POST', body })
 * console.log(proxy.stats) // { received, forwarded, dropped, delivered, abandoned, failed }
 * await proxy.close()
 */
export async function startFaultProxy(options: FaultProxyOptions): Promise<FaultProxy> {
  const settings = resolveProxyOptions(options)
  const stats: FaultProxyStats = { received: 0, forwarded: 0, dropped: 0, delivered: 0, abandoned: 0, failed: 0 }
  // With a timeout of its own, the agent honours the target's `Keep-Alive: timeout=N` and
  // lets an idle connection go a second before the target would close it. Without one it
  // keeps idle connections until the target closes them, and a request sent on one as
  // the target closes it fails (ECONNRESET): a 502 nobody asked for, for a request the
  // target never saw.
  const agent = new http.Agent({ keepAlive: true, maxSockets: settings.maxUpstreamSockets, timeout: settings.upstreamTimeoutMs })
  const server = http.createServer(relay(settings, stats, agent))
  // Bounded: a stuck client cannot hold the proxy open forever.
  server.requestTimeout = settings.upstreamTimeoutMs * 2
  let open = 0
  server.on('connection', (socket) => {
    open++
    socket.once('close', () => open--)
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => resolve())
  })
  const { port } = server.address() as AddressInfo

  return {
    url: `http://127.0.0.1:${port}`,
    get stats() {
      return { ...stats }
    },
    get open() {
      return open
    },
    close() {
      return new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
        agent.destroy()
      })
    },
  }
}

type ProxySettings = Required<Omit<FaultProxyOptions, 'target' | 'seed'>> & { upstream: URL; random: () => number }

function resolveProxyOptions(options: FaultProxyOptions): ProxySettings {
  assertKnownOptions('startFaultProxy', options, OPTIONS)
  const {
    target,
    dropResponseProbability = 0,
    seed = 1,
    droppable = () => true,
    maxBodyBytes = 1024 * 1024,
    upstreamTimeoutMs = 30_000,
    maxUpstreamSockets = 64,
  } = options
  const upstream = loopbackTarget(target)
  if (typeof dropResponseProbability !== 'number' || !(dropResponseProbability >= 0 && dropResponseProbability <= 1)) {
    throw new InvalidOptionError(`startFaultProxy: option "dropResponseProbability" must be a number from 0 to 1, got ${String(dropResponseProbability)}`)
  }
  if (!Number.isInteger(seed)) throw new InvalidOptionError(`startFaultProxy: option "seed" must be an integer, got ${String(seed)}`)
  if (typeof droppable !== 'function') throw new InvalidOptionError('startFaultProxy: option "droppable" must be a function')
  assertCount('startFaultProxy: option "maxBodyBytes"', maxBodyBytes, 1, Number.MAX_SAFE_INTEGER)
  assertDuration('startFaultProxy: option "upstreamTimeoutMs"', upstreamTimeoutMs, 1)
  assertCount('startFaultProxy: option "maxUpstreamSockets"', maxUpstreamSockets, 1, 10_000)
  return { upstream, dropResponseProbability, droppable, maxBodyBytes, upstreamTimeoutMs, maxUpstreamSockets, random: seededRandom(seed) }
}

/** The proxy's request handler: relay to the target, read its whole answer, then drop it or pass it on. */
function relay(o: ProxySettings, stats: FaultProxyStats, agent: http.Agent): http.RequestListener {
  return (req, res) => {
    stats.received++
    // The client may give up before the answer comes; the request is relayed all the same.
    let clientGone = false
    res.once('close', () => void (clientGone = !res.writableFinished))
    const fail = (status: number): void => {
      stats.failed++
      if (res.headersSent) res.destroy()
      else res.writeHead(status, { 'content-type': 'text/plain', connection: 'close' }).end(`fault proxy: ${status}`)
    }
    const answered = (answer: http.IncomingMessage, payload: Buffer): void => {
      stats.forwarded++
      // One draw per answered request, in arrival order, so a seed gives the same
      // number of drops for the same number of requests.
      const draw = o.random()
      if (clientGone) {
        stats.abandoned++
      } else if (o.droppable({ method: req.method ?? 'GET', url: req.url ?? '/' }) && draw < o.dropResponseProbability) {
        stats.dropped++
        req.socket.destroy()
      } else {
        stats.delivered++
        res.writeHead(answer.statusCode ?? 502, answer.statusMessage, { ...relayable(answer.headers), 'content-length': String(payload.length) })
        res.end(payload)
      }
    }
    readBounded(req, o.maxBodyBytes).then((body) => {
      if (body === undefined) return fail(413)
      const forward = http.request({
        host: o.upstream.hostname.replace(/^\[|\]$/g, ''),
        port: o.upstream.port,
        method: req.method,
        path: req.url,
        headers: { ...relayable(req.headers), host: o.upstream.host, 'content-length': String(body.length) },
        agent,
      })
      // Set on the request, not as its `timeout` option: with that option equal to the
      // agent's, a kept-alive connection would keep its idle timeout (a second short of
      // the target's Keep-Alive) for this request too, and a slow answer would be a 504.
      forward.setTimeout(o.upstreamTimeoutMs, () => forward.destroy(new Error('upstream timeout')))
      forward.on('error', (error) => fail(error.message === 'upstream timeout' ? 504 : 502))
      forward.on('response', (answer) => {
        readBounded(answer, o.maxBodyBytes).then((payload) => (payload === undefined ? fail(502) : answered(answer, payload)), () => fail(502))
      })
      forward.end(body)
    }, () => fail(400))
  }
}

/**
 * A small, fast, seeded PRNG (mulberry32) returning numbers in [0, 1). The same seed
 * gives the same sequence, so fault runs and jittered backoff can be replayed exactly.
 * @example const random = seededRandom(42); random() // → 0.6011037519201636
 */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

function loopbackTarget(target: string): URL {
  let url: URL
  try {
    url = new URL(target)
  } catch (cause) {
    throw new InvalidOptionError(`startFaultProxy: option "target" must be a URL, got ${JSON.stringify(target)}`, { cause })
  }
  // A fault injector that drops answers has no business in front of anything but a
  // local test server.
  const loopback = LOOPBACK_HOSTS.has(url.hostname) || /^127\.\d+\.\d+\.\d+$/.test(url.hostname)
  if (url.protocol !== 'http:' || !loopback) {
    throw new InvalidOptionError(`startFaultProxy: option "target" must be an http:// URL on a loopback address, got ${JSON.stringify(target)}`)
  }
  return url
}

function relayable(headers: http.IncomingHttpHeaders): http.OutgoingHttpHeaders {
  const named = new Set(
    String(headers.connection ?? '')
      .split(',')
      .map((name) => name.trim().toLowerCase()),
  )
  const out: http.OutgoingHttpHeaders = {}
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined && !HOP_BY_HOP.has(name) && !named.has(name)) out[name] = value
  }
  return out
}

/**
 * Reads a whole message body, or resolves undefined past `limit` bytes. Past the limit
 * the rest is read and thrown away rather than the stream destroyed, so the connection
 * survives to carry the 413 or 502.
 */
function readBounded(stream: http.IncomingMessage, limit: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    stream.on('data', (chunk: Buffer) => {
      size += chunk.length
      if (size <= limit) chunks.push(chunk)
    })
    stream.on('end', () => resolve(size > limit ? undefined : Buffer.concat(chunks)))
    stream.on('error', reject)
  })
}
