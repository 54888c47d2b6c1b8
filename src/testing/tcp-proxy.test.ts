import net from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { InvalidOptionError } from '../index.js'
import { startTcpFaultProxy } from './index.js'

// The proxy in front of a local echo server: it relays bytes both ways, and cut() ends
// every open connection at once.

describe('startTcpFaultProxy', () => {
  let echo: net.Server
  let target: string
  beforeAll(async () => {
    echo = net.createServer((socket) => {
      socket.on('error', () => {})
      socket.pipe(socket)
    })
    await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve))
    target = `127.0.0.1:${(echo.address() as net.AddressInfo).port}`
  })
  afterAll(() => new Promise<void>((resolve) => echo.close(() => resolve())))

  /** A connection through the proxy, with what it received and how it ended. */
  async function connect(port: number) {
    const socket = net.connect({ host: '127.0.0.1', port })
    const seen = { data: '', ended: false, error: undefined as (Error & { code?: string }) | undefined }
    socket.on('data', (chunk) => (seen.data += chunk))
    socket.on('error', (error) => (seen.error = error))
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()))
    socket.on('end', () => (seen.ended = true))
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve)
      socket.once('error', reject)
    })
    const echoed = async (text: string) => {
      const before = seen.data.length
      socket.write(text)
      while (seen.data.length < before + text.length && !socket.destroyed) await new Promise((resolve) => setTimeout(resolve, 5))
      return seen.data.slice(before)
    }
    return { socket, seen, closed, echoed }
  }

  it('relays bytes both ways, and cut() ends every open connection (FIN, or RST with reset)', async () => {
    const proxy = await startTcpFaultProxy({ target })
    try {
      expect(proxy.host).toBe('127.0.0.1')
      const a = await connect(proxy.port)
      const b = await connect(proxy.port)
      expect(await a.echoed('hello')).toBe('hello')
      expect(await b.echoed('world')).toBe('world')
      expect(proxy.open).toBe(2)

      expect(proxy.cut()).toBe(2)
      await Promise.all([a.closed, b.closed])
      expect(a.seen.ended || a.seen.error !== undefined).toBe(true)
      expect(proxy.open).toBe(0)

      // New connections go through as before; a reset reaches the client as ECONNRESET.
      const c = await connect(proxy.port)
      expect(await c.echoed('again')).toBe('again')
      expect(proxy.cut({ reset: true })).toBe(1)
      await c.closed
      expect(c.seen.error?.code).toBe('ECONNRESET')
      expect(proxy.stats).toEqual({ accepted: 3, refused: 0, cut: 3 })
    } finally {
      await proxy.close()
    }
  })

  it('refuse(true) turns new connections away and leaves open ones alone; refuse(false) lets them in again', async () => {
    const proxy = await startTcpFaultProxy({ target })
    try {
      const open = await connect(proxy.port)
      proxy.refuse(true)
      const turned = await connect(proxy.port)
      await turned.closed
      expect(turned.seen.data).toBe('')
      expect(await open.echoed('still here')).toBe('still here')
      proxy.refuse(false)
      const back = await connect(proxy.port)
      expect(await back.echoed('back')).toBe('back')
      expect(proxy.stats.refused).toBe(1)
    } finally {
      await proxy.close()
    }
  })

  it('closes connections over maxConnections at once, and those the target refuses', async () => {
    const proxy = await startTcpFaultProxy({ target, maxConnections: 1 })
    const nowhere = await startTcpFaultProxy({ target: '127.0.0.1:1' })
    try {
      const first = await connect(proxy.port)
      const second = await connect(proxy.port)
      await second.closed
      expect(await first.echoed('one')).toBe('one')
      const lost = await connect(nowhere.port)
      await lost.closed
      expect(nowhere.stats).toEqual({ accepted: 0, refused: 1, cut: 0 })
    } finally {
      await proxy.close()
      await nowhere.close()
    }
  })

  it('refuses a target off loopback and malformed options, naming the option', async () => {
    for (const bad of ['10.0.0.5:5432', 'db.example.com:5432', '127.0.0.1', '127.0.0.1:0', '127.0.0.1:70000', 'http://127.0.0.1:5432', 5432]) {
      await expect(startTcpFaultProxy({ target: bad as string })).rejects.toThrow(InvalidOptionError)
    }
    await expect(startTcpFaultProxy({ target: '10.0.0.5:5432' })).rejects.toThrow('loopback')
    await expect(startTcpFaultProxy({ target, maxConnections: 0 })).rejects.toThrow('startTcpFaultProxy: option "maxConnections"')
    await expect(startTcpFaultProxy({ target, connectTimeoutMs: 3e9 })).rejects.toThrow('startTcpFaultProxy: option "connectTimeoutMs"')
    const proxy = await startTcpFaultProxy({ target: target.replace('127.0.0.1', 'localhost') })
    try {
      expect(() => proxy.cut({ reset: 'yes' as never })).toThrow(InvalidOptionError)
      expect(() => proxy.refuse(1 as never)).toThrow(InvalidOptionError)
    } finally {
      await proxy.close()
    }
  })
})
