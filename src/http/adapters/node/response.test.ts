import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import { captureResponse, release, sendHeld } from './response.js'

/** One request to a server whose handler is `handle`; resolves with the status, a header and the body the client got. */
async function exchange(handle: (res: http.ServerResponse) => Promise<void>): Promise<{ status: number; wrapped: string | null; body: string }> {
  const server = http.createServer((_req, res) => void handle(res).catch((error: unknown) => res.destroy(error as Error)))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  try {
    const response = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`)
    return { status: response.status, wrapped: response.headers.get('x-wrapped'), body: await response.text() }
  } finally {
    server.closeAllConnections()
    server.close()
  }
}

describe('the response hold (the Express, Fastify, Koa and NestJS adapters)', () => {
  it('held, let go, and held again: the second hold sends through Node’s own methods', async () => {
    const got = await exchange(async (res) => {
      void captureResponse(res)
      release(res)
      const reply = captureResponse(res)
      res.statusCode = 201
      res.end('second')
      expect(res.headersSent).toBe(false)
      const held = await reply
      sendHeld(res, held.kind === 'reply' ? held.body : '', false)
    })
    expect(got).toEqual({ status: 201, wrapped: null, body: 'second' })
  })

  it('stands in front of a wrapper on the response, which runs when the answer is sent, and after a release', async () => {
    const got = await exchange(async (res) => {
      const { writeHead } = res
      res.writeHead = function (this: http.ServerResponse, ...args: unknown[]) {
        this.setHeader('x-wrapped', 'yes')
        return Reflect.apply(writeHead, this, args)
      } as typeof res.writeHead
      const reply = captureResponse(res)
      res.writeHead(202, { 'content-type': 'text/plain' })
      res.write('held ')
      res.end('body')
      expect(res.getHeader('x-wrapped')).toBeUndefined()
      const held = await reply
      release(res)
      // Released: a write goes through the wrapper to Node's own methods.
      res.setHeader('content-length', 9)
      res.end(held.kind === 'reply' ? held.body : '')
    })
    expect(got).toEqual({ status: 202, wrapped: 'yes', body: 'held body' })
  })
})
