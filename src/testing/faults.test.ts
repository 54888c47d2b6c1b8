import http from 'node:http'
import net, { type AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { InvalidOptionError } from '../core/errors/index.js'
import { seededRandom, startFaultProxy, type FaultProxy } from './index.js'

// A plain server that counts what it handled: the "commit" the proxy lets happen.
let handled = 0
const server = http.createServer((req, res) => {
  const chunks: Buffer[] = []
  req.on('data', (c: Buffer) => chunks.push(c))
  req.on('end', () => {
    handled++
    res.writeHead(201, { 'content-type': 'application/json', 'x-handled': String(handled), 'set-cookie': ['a=1', 'b=2'] })
    res.end(JSON.stringify({ method: req.method, url: req.url, body: Buffer.concat(chunks).toString(), key: req.headers['idempotency-key'] ?? null }))
  })
})
let target = ''
beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  target = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

/** Waits for a condition the proxy reaches on its own, checking every few milliseconds. */
async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((resolve) => setTimeout(resolve, 5))
}

async function withProxy<T>(options: Omit<Parameters<typeof startFaultProxy>[0], 'target'>, run: (proxy: FaultProxy) => Promise<T>): Promise<T> {
  const proxy = await startFaultProxy({ target, ...options })
  try {
    return await run(proxy)
  } finally {
    await proxy.close()
  }
}

describe('startFaultProxy', () => {
  it('relays status, headers and body untouched when nothing is dropped', async () => {
    await withProxy({ dropResponseProbability: 0 }, async (proxy) => {
      expect(proxy.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
      const response = await fetch(`${proxy.url}/orders?x=1`, { method: 'POST', body: 'hello', headers: { 'idempotency-key': '"k1"' } })
      expect(response.status).toBe(201)
      expect(response.headers.getSetCookie()).toEqual(['a=1', 'b=2'])
      expect(await response.json()).toEqual({ method: 'POST', url: '/orders?x=1', body: 'hello', key: '"k1"' })
      expect(proxy.stats).toEqual({ received: 1, forwarded: 1, dropped: 0, delivered: 1, abandoned: 0, failed: 0 })
    })
  })

  it('lets the server handle the request, then drops the answer', async () => {
    await withProxy({ dropResponseProbability: 1 }, async (proxy) => {
      const before = handled
      const error = await fetch(`${proxy.url}/orders`, { method: 'POST', body: 'x' }).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(TypeError) // what a lost connection looks like to fetch
      expect(handled).toBe(before + 1) // ...yet the server did the work
      expect(proxy.stats).toMatchObject({ received: 1, forwarded: 1, dropped: 1, delivered: 0 })
    })
  })

  it('relays a request whose client gave up, and counts its answer abandoned, not delivered', async () => {
    // A target that holds the request until the test lets it answer.
    let arrived = (): void => {}
    const held = new Promise<void>((resolve) => (arrived = resolve))
    let release = (): void => {}
    const gate = new Promise<void>((resolve) => (release = resolve))
    let ran = 0
    const slow = http.createServer((req, res) => {
      req.resume()
      ran++
      arrived()
      void gate.then(() => res.end('too late'))
    })
    await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve))
    const proxy = await startFaultProxy({ target: `http://127.0.0.1:${(slow.address() as AddressInfo).port}` })
    try {
      // A client on a socket of its own, so the proxy's open count is this one connection.
      const client = net.connect(Number(new URL(proxy.url).port), '127.0.0.1')
      client.on('error', () => {})
      client.write('POST /orders HTTP/1.1\r\nHost: proxy\r\nContent-Length: 1\r\n\r\nx')
      await held
      client.destroy() // it gives up: a timeout, a cancel
      await until(() => proxy.open === 0) // the proxy saw it go
      release()
      await until(() => proxy.stats.forwarded === 1)
      expect(ran).toBe(1)
      expect(proxy.stats).toEqual({ received: 1, forwarded: 1, dropped: 0, delivered: 0, abandoned: 1, failed: 0 })
    } finally {
      await proxy.close()
      slow.closeAllConnections()
      await new Promise((resolve) => slow.close(resolve))
    }
  })

  it("lets an idle connection to the target go before the target's keep-alive closes it", async () => {
    // A target that announces Keep-Alive: timeout=2 (and closes an idle connection 1 s
    // after that): a request the proxy sent on a connection the target was closing would
    // fail with ECONNRESET, a 502 for a request the target never saw.
    const target = http.createServer((req, res) => {
      req.resume()
      req.on('end', () => res.end('ok'))
    })
    target.keepAliveTimeout = 2_000
    const closedBy = new Promise<string>((resolve) => {
      target.once('connection', (socket) => {
        socket.once('end', () => resolve('proxy'))
        socket.once('timeout', () => resolve('target'))
      })
    })
    await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve))
    const proxy = await startFaultProxy({ target: `http://127.0.0.1:${(target.address() as AddressInfo).port}` })
    try {
      expect(await (await fetch(`${proxy.url}/`)).text()).toBe('ok')
      expect(await closedBy).toBe('proxy')
    } finally {
      await proxy.close()
      target.closeAllConnections()
      await new Promise((resolve) => target.close(resolve))
    }
  })

  it('gives a request on a kept-alive connection the whole upstreamTimeoutMs, not the idle timeout the connection had', async () => {
    // Keep-Alive: timeout=3: the proxy lets an idle connection go after 2 s. The second
    // request, sent on that connection at once, is answered after 2.5 s.
    let requests = 0
    let connections = 0
    const target = http.createServer((req, res) => {
      req.resume()
      const hold = requests++ === 0 ? 0 : 2_500
      req.on('end', () => setTimeout(() => res.end('ok'), hold))
    })
    target.keepAliveTimeout = 3_000
    target.on('connection', () => connections++)
    await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve))
    const proxy = await startFaultProxy({ target: `http://127.0.0.1:${(target.address() as AddressInfo).port}` })
    try {
      expect((await fetch(`${proxy.url}/`)).status).toBe(200)
      expect((await fetch(`${proxy.url}/`)).status).toBe(200)
      expect({ connections, failed: proxy.stats.failed }).toEqual({ connections: 1, failed: 0 })
    } finally {
      await proxy.close()
      target.closeAllConnections()
      await new Promise((resolve) => target.close(resolve))
    }
  })

  it('drops the share its seed decides, the same for the same seed', async () => {
    const run = (seed: number): Promise<boolean[]> =>
      withProxy({ dropResponseProbability: 0.3, seed }, async (proxy) => {
        const outcomes: boolean[] = []
        for (let i = 0; i < 100; i++) outcomes.push(await fetch(`${proxy.url}/`).then((r) => r.text().then(() => true), () => false))
        expect(proxy.stats).toMatchObject({ forwarded: 100, dropped: outcomes.filter((ok) => !ok).length })
        return outcomes
      })
    const first = await run(7)
    expect(await run(7)).toEqual(first)
    // One draw per answered request: the pattern is the PRNG's, request by request.
    const random = seededRandom(7)
    expect(first).toEqual(Array.from({ length: 100 }, () => random() >= 0.3))
    expect(first.filter((ok) => !ok).length).toBeGreaterThan(10)
    expect(first.filter((ok) => !ok).length).toBeLessThan(50)
  })

  it('drops only what `droppable` allows', async () => {
    await withProxy({ dropResponseProbability: 1, droppable: ({ method }) => method === 'POST' }, async (proxy) => {
      expect((await fetch(`${proxy.url}/a`)).status).toBe(201)
      await expect(fetch(`${proxy.url}/a`, { method: 'POST', body: '' })).rejects.toThrow(TypeError)
      expect(proxy.stats).toMatchObject({ forwarded: 2, dropped: 1, delivered: 1 })
    })
  })

  it('answers 413 past maxBodyBytes without forwarding, and 502 when the target is down', async () => {
    await withProxy({ maxBodyBytes: 10 }, async (proxy) => {
      const before = handled
      expect((await fetch(`${proxy.url}/`, { method: 'POST', body: 'x'.repeat(11) })).status).toBe(413)
      expect(handled).toBe(before)
      expect(proxy.stats).toMatchObject({ received: 1, forwarded: 0, failed: 1 })
    })
    const closed = http.createServer()
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
    const port = (closed.address() as AddressInfo).port
    await new Promise<void>((resolve) => closed.close(() => resolve()))
    const proxy = await startFaultProxy({ target: `http://127.0.0.1:${port}` })
    try {
      expect((await fetch(`${proxy.url}/`)).status).toBe(502)
      expect(proxy.stats).toMatchObject({ received: 1, forwarded: 0, failed: 1 })
    } finally {
      await proxy.close()
    }
  })

  it.each<[string, Record<string, unknown>]>([
    ['target', { target: 'http://example.com' }],
    ['target', { target: 'https://127.0.0.1:1' }],
    ['target', { target: 'not a url' }],
    ['dropResponseProbability', { dropResponseProbability: 1.5 }],
    ['dropResponseProbability', { dropResponseProbability: Number.NaN }],
    ['seed', { seed: 0.5 }],
    ['maxBodyBytes', { maxBodyBytes: 0 }],
  ])('refuses a bad %s with InvalidOptionError', async (option, bad) => {
    const attempt = startFaultProxy({ target, ...bad } as Parameters<typeof startFaultProxy>[0])
    await expect(attempt).rejects.toBeInstanceOf(InvalidOptionError)
    await expect(attempt).rejects.toThrow(`option "${option}"`)
  })

  it('close() cuts kept-alive connections and frees the port', async () => {
    const proxy = await startFaultProxy({ target })
    await (await fetch(`${proxy.url}/`)).text() // leaves a kept-alive socket behind
    await proxy.close()
    await expect(fetch(`${proxy.url}/`)).rejects.toThrow(TypeError)
  })
})
