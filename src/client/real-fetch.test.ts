import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createClient, RetriesExhaustedError, type RetryEvent } from './index.js'

// The client with the real global fetch against a real socket: the failures that
// matter (refused, cut off mid-body, hung) as Node's fetch reports them.
const hits = new Map<string, number>()
const server = http.createServer((req, res) => {
  const path = req.url ?? '/'
  const n = (hits.get(path) ?? 0) + 1
  hits.set(path, n)
  const chunks: Buffer[] = []
  req.on('data', (c: Buffer) => chunks.push(c))
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString()
    if (path === '/moved') return void res.writeHead(307, { location: '/landed' }).end()
    if (path === '/cut' && n === 1) {
      // Headers and half a body, then the connection dies.
      res.writeHead(201, { 'content-type': 'application/json', 'content-length': '100' })
      res.write('{"partial":')
      setTimeout(() => res.socket?.destroy(), 5)
      return
    }
    if (path === '/hang' && n === 1) return // never answers
    res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify({ path, body, n, key: req.headers['idempotency-key'] }))
  })
})
let base = ''
beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(
  () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve())
      server.closeAllConnections()
    }),
)

describe('with the real fetch', () => {
  it('retries a response cut off half-way through its body, with the same key', async () => {
    const retries: RetryEvent[] = []
    const result = await createClient({ backoff: { baseMs: 1 }, onRetry: (e) => retries.push(e) }).fetch(`${base}/cut`, { method: 'POST', body: 'x' })
    expect(result.attempts).toBe(2)
    expect(retries).toMatchObject([{ reason: 'network' }])
    expect(await result.response.json()).toMatchObject({ n: 2, body: 'x', key: `"${result.key}"` })
  })

  it('retries an attempt the server never answers, once attemptTimeoutMs passes', async () => {
    const retries: RetryEvent[] = []
    const result = await createClient({ backoff: { baseMs: 1 }, attemptTimeoutMs: 50, onRetry: (e) => retries.push(e) }).fetch(`${base}/hang`, { method: 'POST', body: 'y' })
    // The first attempt is never answered; every later one is at once, though a busy
    // machine may take longer than 50 ms to deliver it and time that one out too.
    expect(result.attempts).toBeGreaterThanOrEqual(2)
    expect(retries).toHaveLength(result.attempts - 1)
    for (const retry of retries) expect(retry).toMatchObject({ reason: 'timeout', key: result.key })
    const answer = (await result.response.json()) as { n: number }
    expect(answer).toMatchObject({ body: 'y', key: `"${result.key}"` })
    expect(answer.n).toBeGreaterThanOrEqual(2)
  })

  it('follows a 307 with the body and key, and keeps response.url and redirected', async () => {
    const result = await createClient().fetch(`${base}/moved`, { method: 'POST', body: 'z' })
    expect(result.response.url).toBe(`${base}/landed`)
    expect(result.response.redirected).toBe(true)
    expect(await result.response.json()).toMatchObject({ path: '/landed', body: 'z', key: `"${result.key}"` })
  })

  it('gives up on a refused connection after maxAttempts with RetriesExhaustedError', async () => {
    const closed = http.createServer()
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
    const port = (closed.address() as AddressInfo).port
    await new Promise<void>((resolve) => closed.close(() => resolve()))
    const error = (await createClient({ backoff: { baseMs: 1 }, maxAttempts: 3 })
      .fetch(`http://127.0.0.1:${port}/`, { method: 'POST', body: '' })
      .catch((e: unknown) => e)) as RetriesExhaustedError
    expect(error).toBeInstanceOf(RetriesExhaustedError)
    expect(error.attempts).toBe(3)
    expect(error.message).toMatch(/ECONNREFUSED/)
  })
})
