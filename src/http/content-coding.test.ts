import fc from 'fast-check'
import { brotliCompressSync, deflateRawSync, deflateSync, gzipSync } from 'node:zlib'
import { describe, expect, it } from 'vitest'
import { BodyTooLargeError } from './body-too-large.js'
import { contentCodings, decodeContent, MAX_CODINGS, type ContentCoding } from './content-coding.js'
import { CorruptBodyError } from './corrupt-body.js'
import { UnsupportedEncodingError } from './unsupported-encoding.js'

const MiB = 1024 * 1024
const ENCODERS: Record<ContentCoding, (bytes: Uint8Array) => Uint8Array> = { gzip: gzipSync, deflate: deflateSync, br: brotliCompressSync }
const text = (bytes: Uint8Array): string => Buffer.from(bytes).toString('utf8')

describe('contentCodings', () => {
  it('lists the codings in the order they were applied, whatever their case; identity and empty elements are none', () => {
    expect(contentCodings('gzip')).toEqual(['gzip'])
    expect(contentCodings('gzip, br')).toEqual(['gzip', 'br'])
    expect(contentCodings(' BR ,\tDeflate')).toEqual(['br', 'deflate'])
    expect(contentCodings('x-gzip')).toEqual(['gzip'])
    expect(contentCodings('identity')).toEqual([])
    expect(contentCodings('')).toEqual([])
    expect(contentCodings(', gzip,, identity ,')).toEqual(['gzip'])
  })

  it('refuses a coding it does not decode, naming it, and more codings than MAX_CODINGS', () => {
    for (const header of ['zstd', 'compress', 'gzip, zstd', 'gzip;q=1', 'chunked', '*']) {
      expect(() => contentCodings(header), header).toThrow(UnsupportedEncodingError)
    }
    expect(() => contentCodings('zstd')).toThrow('"zstd"')
    expect(() => contentCodings(`x${'y'.repeat(10_000)}`)).toThrow(/"xy{31}…"/)
    expect(contentCodings(Array(MAX_CODINGS).fill('gzip').join(','))).toHaveLength(MAX_CODINGS)
    expect(() => contentCodings(Array(MAX_CODINGS + 1).fill('gzip').join(','))).toThrow(UnsupportedEncodingError)
    // identity is no pass, so any number of them is fine.
    expect(contentCodings(Array(100).fill('identity').join(','))).toEqual([])
  })
})

describe('decodeContent', () => {
  it('undoes gzip, deflate and br', async () => {
    const body = Buffer.from(JSON.stringify({ id: 'order-1', lines: Array.from({ length: 500 }, (_, i) => ({ sku: i })) }))
    for (const coding of ['gzip', 'deflate', 'br'] as const) {
      expect(text(await decodeContent(ENCODERS[coding](body), [coding], MiB)), coding).toBe(text(body))
    }
  })

  it('round-trips any bytes through every coding', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 4096 }), fc.constantFrom<ContentCoding>('gzip', 'deflate', 'br'), async (bytes, coding) => {
        const decoded = await decodeContent(ENCODERS[coding](bytes), [coding], MiB)
        expect(Buffer.from(decoded).equals(Buffer.from(bytes))).toBe(true)
      }),
      { numRuns: 60 },
    )
  })

  it('undoes several codings last applied first: "gzip, br" is br over gzip', async () => {
    const body = Buffer.from('{"a":1}')
    expect(text(await decodeContent(brotliCompressSync(gzipSync(body)), contentCodings('gzip, br'), MiB))).toBe('{"a":1}')
    expect(text(await decodeContent(gzipSync(deflateSync(gzipSync(body))), contentCodings('gzip, deflate, gzip'), MiB))).toBe('{"a":1}')
    // Undone in the wrong order, the bytes are not what the coding makes.
    await expect(decodeContent(brotliCompressSync(gzipSync(body)), contentCodings('br, gzip'), MiB)).rejects.toThrow(CorruptBodyError)
  })

  it('reads concatenated gzip members as one body, as gzip itself does', async () => {
    const body = Buffer.concat([gzipSync('{"a":'), gzipSync('1}')])
    expect(text(await decodeContent(body, ['gzip'], MiB))).toBe('{"a":1}')
  })

  it('a body that decodes to more than the limit is refused, at the limit or one byte over', async () => {
    const body = new Uint8Array(64 * 1024).fill(120)
    expect((await decodeContent(gzipSync(body), ['gzip'], body.byteLength)).byteLength).toBe(body.byteLength)
    for (const coding of ['gzip', 'deflate', 'br'] as const) {
      const refused = decodeContent(ENCODERS[coding](body), [coding], body.byteLength - 1)
      await expect(refused, coding).rejects.toThrow(BodyTooLargeError)
      await expect(refused, coding).rejects.toThrow(`larger than ${body.byteLength - 1} bytes (maxBodyBytes) once decoded`)
    }
  })

  it('a bomb (1000 MiB of zeros in 1 MB of gzip) is refused at the limit without holding what it inflates to', async () => {
    // One member of 10 MiB of zeros is 10 KB of gzip; a hundred of them, one after
    // another, are one gzip body of 1000 MiB.
    const member = gzipSync(new Uint8Array(10 * MiB))
    const bomb = Buffer.concat(Array(100).fill(member))
    expect(bomb.byteLength).toBeLessThan(1.1 * MiB)
    const before = process.memoryUsage().rss
    await expect(decodeContent(bomb, ['gzip'], MiB)).rejects.toThrow(BodyTooLargeError)
    // Decoded whole, it would have taken 1000 MiB; read on demand it stops 16 KiB past the limit.
    expect(process.memoryUsage().rss - before).toBeLessThan(200 * MiB)
    // br packs 10 MiB of zeros into a few bytes, and is refused the same way.
    await expect(decodeContent(brotliCompressSync(new Uint8Array(10 * MiB)), ['br'], MiB)).rejects.toThrow(BodyTooLargeError)
  })

  it('bytes that are not what their coding makes are CorruptBodyError: not compressed, truncated, trailing bytes, raw deflate', async () => {
    const gzipped = gzipSync('{"a":1}')
    const corrupt: Array<[ContentCoding, Uint8Array]> = [
      ['gzip', Buffer.from('{"a":1}')],
      ['gzip', gzipped.subarray(0, gzipped.byteLength - 4)],
      ['gzip', Buffer.concat([gzipped, Buffer.from('junk')])],
      ['deflate', deflateRawSync('{"a":1}')],
      ['deflate', Buffer.from('{"a":1}')],
      ['br', Buffer.from('{"a":1}')],
    ]
    for (const [coding, bytes] of corrupt) {
      const decoded = decodeContent(bytes, [coding], MiB)
      await expect(decoded, `${coding} ${Buffer.from(bytes).toString('hex')}`).rejects.toThrow(CorruptBodyError)
      await expect(decoded).rejects.toThrow(`not valid ${coding} data`)
    }
  })

  it('an empty body is empty whatever its codings', async () => {
    expect((await decodeContent(new Uint8Array(0), ['gzip', 'br'], MiB)).byteLength).toBe(0)
  })
})
