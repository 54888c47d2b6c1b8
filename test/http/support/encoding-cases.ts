// The rows of the conformance table about content codings: the fingerprint is taken over
// the decoded body (gzip, deflate, br, several of them), a coding idem cannot decode is
// 415, a body that does not decode is 400, and one that decodes past maxBodyBytes is 413.
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib'
import { expect } from 'vitest'
import { expectProblem, fresh, quoted, rejected, type CaseContext, type ConformanceCase } from './case-kit.js'
import type { Call } from './frontends.js'

/** The rows' names, for the front ends whose platform decodes a body before idem sees it to list what they cannot pass. */
export const ENCODING_CASES = {
  gzip: 'a gzip body is fingerprinted decoded: the same JSON gzipped at another time, sent plain or as identity, replays; other JSON is 422',
  deflate: 'a deflate body is fingerprinted decoded: it replays the same JSON sent plain; other JSON is 422',
  br: 'a br body is fingerprinted decoded: it replays the same JSON sent plain; other JSON is 422',
  several: 'several codings are undone last applied first: a "gzip, br" body replays the same JSON sent plain; in the wrong order it is 400 corrupt-body',
  unsupported: 'a Content-Encoding idem does not decode is 415 unsupported-encoding with Accept-Encoding; nothing runs or is stored',
  corrupt: 'a body that does not decode as its Content-Encoding says is 400 corrupt-body; nothing runs or is stored',
  bomb: 'a body that decodes past maxBodyBytes is 413 body-too-large (a gzip bomb); one that decodes to the limit passes',
} as const

const ORDER = { customer: 'c-1', lines: [{ sku: 'A-1', qty: 2 }], note: 'leave at the door' }
const JSON_TEXT = JSON.stringify(ORDER)
// The same JSON with its members in another order: the same request.
const REORDERED = JSON.stringify({ note: ORDER.note, lines: ORDER.lines, customer: ORDER.customer })
const OTHER = JSON.stringify({ ...ORDER, lines: [{ sku: 'A-1', qty: 3 }] })

/** gzip as Python's `gzip.compress()` writes it: the time of the call in the header's MTIME. */
function gzipAt(text: string, mtime: number): Uint8Array {
  const bytes = gzipSync(text)
  bytes.writeUInt32LE(mtime, 4)
  return bytes
}

const ENCODE = { deflate: deflateSync, br: brotliCompressSync } as const

function order(key: string, body: string | Uint8Array, contentEncoding?: string): Call {
  return { path: '/orders', key: quoted(key), contentType: 'application/json', body, ...(contentEncoding === undefined ? {} : { contentEncoding }) }
}

async function created(t: CaseContext, call: Call): Promise<void> {
  expect((await t.client.send(call)).status).toBe(201)
}

async function replayed(t: CaseContext, call: Call): Promise<void> {
  const response = await t.client.send(call)
  expect(response.status).toBe(201)
  expect(response.headers.get('idempotent-replayed')).toBe('true')
}

/** The key's one run, and one effect. */
async function ranOnce(t: CaseContext, key: string): Promise<void> {
  expect(t.state.runs['/orders']).toBe(1)
  expect(await t.backend.countEffects(key)).toBe(1)
}

export const encodingCases: ConformanceCase[] = [
  {
    name: ENCODING_CASES.gzip,
    async run(t) {
      const key = fresh()
      // The route gets the gzip body as sent (Express's parser after idem decodes it itself).
      await created(t, order(key, gzipAt(JSON_TEXT, 1_764_637_200), 'gzip'))
      await replayed(t, order(key, gzipAt(JSON_TEXT, 1_764_637_201), 'gzip'))
      await replayed(t, order(key, REORDERED))
      await replayed(t, order(key, JSON_TEXT, 'identity'))
      await expectProblem(await t.client.send(order(key, gzipAt(OTHER, 1_764_637_202), 'gzip')), 422, 'fingerprint-mismatch')
      await ranOnce(t, key)
    },
  },
  ...(['deflate', 'br'] as const).map(
    (coding): ConformanceCase => ({
      name: ENCODING_CASES[coding],
      async run(t) {
        const key = fresh()
        await created(t, order(key, JSON_TEXT))
        await replayed(t, order(key, ENCODE[coding](REORDERED), coding))
        await expectProblem(await t.client.send(order(key, ENCODE[coding](OTHER), coding)), 422, 'fingerprint-mismatch')
        await ranOnce(t, key)
      },
    }),
  ),
  {
    name: ENCODING_CASES.several,
    async run(t) {
      const key = fresh()
      await created(t, order(key, JSON_TEXT))
      // gzip was applied first, then br: br is undone first.
      await replayed(t, order(key, brotliCompressSync(gzipSync(REORDERED)), 'gzip, br'))
      await expectProblem(await t.client.send(order(key, gzipSync(brotliCompressSync(REORDERED)), 'gzip, br')), 400, 'corrupt-body')
      await expectProblem(await t.client.send(order(key, brotliCompressSync(gzipSync(OTHER)), 'GZIP, BR')), 422, 'fingerprint-mismatch')
      await ranOnce(t, key)
    },
  },
  {
    name: ENCODING_CASES.unsupported,
    async run(t) {
      for (const coding of ['zstd', 'compress', 'gzip, gzip, gzip, gzip']) {
        const response = await rejected(t, order(fresh(), gzipSync(JSON_TEXT), coding), 415, 'unsupported-encoding')
        expect(response.headers.get('accept-encoding'), coding).toBe('gzip, deflate, br')
      }
    },
  },
  {
    name: ENCODING_CASES.corrupt,
    async run(t) {
      const gzipped = gzipSync(JSON_TEXT)
      for (const [coding, bytes] of [
        ['gzip', JSON_TEXT],
        ['gzip', gzipped.subarray(0, gzipped.byteLength - 8)],
        ['deflate', gzipped],
        ['br', JSON_TEXT],
      ] as const) {
        await rejected(t, order(fresh(), bytes, coding), 400, 'corrupt-body')
      }
    },
  },
  {
    name: ENCODING_CASES.bomb,
    options: { maxBodyBytes: 64 * 1024 },
    async run(t) {
      // 10 MiB of zeros is 10 KB of gzip: under the limit as sent, 160 times over it decoded.
      const bomb = gzipSync(new Uint8Array(10 * 1024 * 1024))
      expect(bomb.byteLength).toBeLessThan(64 * 1024)
      await rejected(t, { ...order(fresh(), bomb, 'gzip'), contentType: 'application/octet-stream' }, 413, 'body-too-large')
      await created(t, { ...order(fresh(), gzipSync('y'.repeat(64 * 1024)), 'gzip'), contentType: 'text/plain' })
    },
  },
]
