// Issue #44, item 6: the same JSON gzipped and retried a second later (Python's
// gzip.compress() writes the time into the gzip header) was answered 422
// fingerprint-mismatch, because the body was fingerprinted as its encoded bytes. The
// fingerprint is now taken over the decoded body, while the route still gets the body as
// sent, so a body parser behind idem decodes it as it would without idem.
import express from 'express'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { brotliCompressSync, gzipSync } from 'node:zlib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { idempotency as expressIdempotency } from '../../src/http/adapters/express/index.js'
import { idempotency } from '../../src/http/fetch/index.js'
import { postgresStore } from '../../src/stores/postgres/index.js'
import { testSchema, type TestSchema } from '../support/postgres.js'
import { httpCall } from './support/frontends.js'

const db = await testSchema('idem_http_encoding')

/** gzip as Python's `gzip.compress()` writes it: the time of the call in the header's MTIME. */
function gzipAt(text: string, unixSeconds: number): Uint8Array {
  const bytes = gzipSync(text)
  bytes.writeUInt32LE(unixSeconds, 4)
  return bytes
}

const ORDER = '{"customer":"c-1","amount":1200,"currency":"EUR"}'

describe.skipIf(db === undefined)('gzip-encoded retries on Postgres (#44, item 6)', () => {
  const { pool, schema } = db as TestSchema
  const orders = `"${schema}".orders`
  const store = postgresStore({ pool, schema })
  beforeAll(async () => {
    await store.migrate()
    await pool.query(`CREATE TABLE ${orders} (id serial PRIMARY KEY, body jsonb NOT NULL)`)
  })
  afterAll(() => db?.drop())

  async function countOrders(): Promise<number> {
    const { rows } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${orders}`)
    return rows[0]!.n
  }

  /** An Express app with express.json() after the middleware (as docs/http.md says), or before it. */
  async function expressApp(parser: 'after' | 'before'): Promise<{ port: number; close(): void }> {
    const app = express()
    if (parser === 'before') app.use(express.json())
    app.use(expressIdempotency({ store, scope: () => 'acct' }))
    if (parser === 'after') app.use(express.json())
    app.post('/orders', async (req, res, next) => {
      try {
        const { tx } = req.idem as { tx: { query(text: string, values: unknown[]): Promise<unknown> } }
        await tx.query(`INSERT INTO ${orders} (body) VALUES ($1)`, [req.body])
        res.status(201).json({ stored: req.body })
      } catch (error) {
        next(error)
      }
    })
    const server = http.createServer(app)
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    return {
      port: (server.address() as AddressInfo).port,
      close() {
        server.closeAllConnections()
        server.close()
      },
    }
  }

  it('Express: the same JSON gzipped a second later replays instead of 422; the route got the body as sent, which express.json() decoded', async () => {
    for (const parser of ['after', 'before'] as const) {
      await pool.query(`TRUNCATE ${orders}`)
      const app = await expressApp(parser)
      try {
        const send = (body: Uint8Array) => httpCall(app.port, { path: '/orders', key: `"retry-${parser}"`, contentType: 'application/json', contentEncoding: 'gzip', body })
        const first = await send(gzipAt(ORDER, 1_764_637_200))
        expect(first.status, parser).toBe(201)
        expect(await first.json()).toEqual({ stored: JSON.parse(ORDER) })
        const retry = await send(gzipAt(ORDER, 1_764_637_201))
        expect(retry.status, parser).toBe(201)
        expect(retry.headers.get('idempotent-replayed'), parser).toBe('true')
        expect(await countOrders(), parser).toBe(1)
        // Another order under the same key is still another request.
        expect((await send(gzipAt('{"customer":"c-1","amount":9900,"currency":"EUR"}', 1_764_637_202))).status, parser).toBe(422)
      } finally {
        app.close()
      }
    }
  })

  it('Fetch: the route gets the request as sent (Content-Encoding and the encoded bytes); an unprotected request is not decoded at all', async () => {
    const seen: Array<{ encoding: string | null; bytes: Uint8Array }> = []
    const handle = idempotency({ store, scope: () => 'acct', required: false })
    const route = async (request: Request): Promise<Response> => {
      seen.push({ encoding: request.headers.get('content-encoding'), bytes: new Uint8Array(await request.arrayBuffer()) })
      return Response.json({ ok: true }, { status: 201 })
    }
    const post = (headers: Record<string, string>, body: Uint8Array) =>
      handle(new Request('http://api.test/orders', { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body }), route)
    const encoded = brotliCompressSync(gzipSync(ORDER))
    expect((await post({ 'idempotency-key': '"fetch-1"', 'content-encoding': 'gzip, br' }, encoded)).status).toBe(201)
    expect(seen).toEqual([{ encoding: 'gzip, br', bytes: new Uint8Array(encoded) }])
    // The same order sent plain is the same request.
    const replay = await post({ 'idempotency-key': '"fetch-1"' }, new TextEncoder().encode(ORDER))
    expect(replay.headers.get('idempotent-replayed')).toBe('true')
    // No key where none is required: the route gets the request untouched, in a coding idem would refuse.
    const zstd = new Uint8Array([40, 181, 47, 253, 0, 0])
    expect((await post({ 'content-encoding': 'zstd' }, zstd)).status).toBe(201)
    expect(seen).toHaveLength(2)
    expect(seen[1]).toEqual({ encoding: 'zstd', bytes: zstd })
  })
})
