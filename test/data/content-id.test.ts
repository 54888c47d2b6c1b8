import { execFile } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { promisify } from 'node:util'
import fc from 'fast-check'
import { validate as isUuid, version as uuidVersion } from 'uuid'
import { build } from 'vite'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { InvalidOptionError } from '../../src/core/errors/index.js'
import { contentId, type ContentIdPart } from '../../src/data/index.js'

const RUNS = { numRuns: 200, seed: 0x1de4 }
const UUID_V8 = /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

// Strings without lone surrogates (which contentId refuses), covering multi-byte UTF-8.
const text = fc.string({ unit: 'grapheme', maxLength: 12 })
const part: fc.Arbitrary<ContentIdPart> = fc.oneof(
  text,
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer(),
  fc.bigInt(),
  fc.uint8Array({ maxLength: 12 }),
)
const parts = fc.array(part, { minLength: 1, maxLength: 6 })

describe('contentId', () => {
  it('keeps the ids it has always given (frozen vectors: stable across runs and versions)', () => {
    expect(contentId('claim', 42, 'chunk', 3, 'embed=v4')).toBe('79edbb226113efd10785835c50f6a5fe0c7a95b311fc3c8ca1a4f6f04cf7e6d7')
    expect(contentId.uuid('claim', 42, 'chunk', 3, 'embed=v4')).toBe('79edbb22-6113-8fd1-8785-835c50f6a5fe')
    expect(contentId('a|b', 'c')).toBe('a7d806e29f38b44b706ff2cc9a64c64c284be403ebca4de2b01dce3cc7b220b4')
    expect(contentId('a', 'b|c')).toBe('dd1b633c56cf1fe9fbf4298573874d34cb2aa0ae45512dfe80de8e5e941ccb11')
    expect(contentId(-1.5, -12345678901234567890n, '')).toBe('7675c90dc0198baf15b01428e9c2a5e9805c30430df9dc79e0550dfb83502814')
    expect(contentId('żółw 🐢')).toBe('fb5a44750fb8a28aa5267d9a20c3e08008cb184888b69b31b142cbc399ad8807')
  })

  it('follows the documented encoding (tag, u64 big-endian length, bytes), so other languages can compute it', () => {
    const hash = createHash('sha256')
    const write = (tag: string, bytes: Buffer): void => {
      const length = Buffer.alloc(8)
      length.writeBigUInt64BE(BigInt(bytes.length))
      hash.update(Buffer.concat([Buffer.from(tag, 'ascii'), length, bytes]))
    }
    const double = Buffer.alloc(8)
    double.writeDoubleBE(2.5)
    write('s', Buffer.from('idem-content-id-v1'))
    write('s', Buffer.from('doc'))
    write('n', double)
    write('i', Buffer.from('-7'))
    write('b', Buffer.from([0, 255]))
    expect(contentId('doc', 2.5, -7n, new Uint8Array([0, 255]))).toBe(hash.digest('hex'))
  })

  it('tells types apart: "1", 1, 1n and the byte 0x31 give four ids', () => {
    const ids = new Set([contentId('1'), contentId(1), contentId(1n), contentId(new Uint8Array([0x31]))])
    expect(ids.size).toBe(4)
  })

  it('gives -0 and 0 the same id; 0 and 0n stay different', () => {
    expect(contentId(-0)).toBe(contentId(0))
    expect(contentId.uuid('x', -0)).toBe(contentId.uuid('x', 0))
    expect(contentId(0)).not.toBe(contentId(0n))
  })

  it('accepts a Buffer as bytes, like the Uint8Array it is', () => {
    expect(contentId(Buffer.from('abc'))).toBe(contentId(new Uint8Array([0x61, 0x62, 0x63])))
  })

  it('exposes the raw digest, equal to the hex form', () => {
    const bytes = contentId.bytes('doc', 1)
    expect(bytes).toBeInstanceOf(Uint8Array)
    expect(Buffer.from(bytes).toString('hex')).toBe(contentId('doc', 1))
  })

  it.each([
    ['no parts', [] as unknown[], /at least one part/],
    ['NaN', [NaN], /part 0 must be a finite number/],
    ['Infinity', ['a', Infinity], /part 1 must be a finite number/],
    ['a lone surrogate', ['ok', '\uD800'], /part 1 .*lone UTF-16 surrogate/],
    ['null', [null], /part 0 must be a string, number, bigint or Uint8Array, got null/],
    ['a boolean', [true], /got boolean/],
    ['an object', [{ id: 1 }], /part 0 .*, got a plain object$/],
    ['undefined', ['doc', undefined], /part 1 .*, got undefined$/],
    ['an array', [['doc', 1]], /part 0 .*, got an array \(spread it into parts\)$/],
    // A Map, a Set or URLSearchParams is never taken for its (empty) JSON, nor a typed
    // array other than Uint8Array for its elements, nor a Date for its text.
    ['a Map', ['doc', new Map([['a', 1]])], /part 1 .*, got an instance of Map$/],
    ['a Set', [new Set([1])], /part 0 .*, got an instance of Set$/],
    ['a URLSearchParams', [new URLSearchParams('a=1')], /part 0 .*, got an instance of URLSearchParams$/],
    ['a Float32Array', ['embedding', new Float32Array([0.5])], /part 1 .*, got an instance of Float32Array$/],
    ['a Date', [new Date(0)], /part 0 .*, got an instance of Date$/],
    ['a boxed string', [new String('doc')], /part 0 .*, got an instance of String$/],
  ])('refuses %s with InvalidOptionError', (_, bad, message) => {
    for (const f of [contentId, contentId.uuid, contentId.bytes]) {
      expect(() => (f as (...p: unknown[]) => string)(...bad)).toThrow(InvalidOptionError)
      expect(() => (f as (...p: unknown[]) => string)(...bad)).toThrow(message)
    }
  })

  it('property: part lists that join to the same string get different ids', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'grapheme', minLength: 1, maxLength: 16 }),
        fc.uniqueArray(fc.nat(), { maxLength: 4 }),
        fc.uniqueArray(fc.nat(), { maxLength: 4 }),
        (whole, cutsA, cutsB) => {
          // Cut between code points: cutting a surrogate pair would make parts contentId refuses.
          const points = [...whole]
          const split = (cuts: number[]): string[] => {
            const at = [...new Set(cuts.map((c) => c % (points.length + 1)))].sort((a, b) => a - b)
            return [0, ...at].map((start, i) => points.slice(start, at[i] ?? points.length).join(''))
          }
          const a = split(cutsA)
          const b = split(cutsB)
          fc.pre(a.join('') === b.join('') && JSON.stringify(a) !== JSON.stringify(b))
          expect(contentId(...a)).not.toBe(contentId(...b))
          expect(contentId.uuid(...a)).not.toBe(contentId.uuid(...b))
        },
      ),
      RUNS,
    )
  })

  it('property: a part moved across a boundary changes the id, whatever the separator', () => {
    fc.assert(
      fc.property(text, text, text, fc.constantFrom('|', ':', '\0', ''), (x, y, z, sep) => {
        fc.pre(sep.length + y.length > 0) // otherwise both lists are (x, z)
        expect(contentId(x + sep + y, z)).not.toBe(contentId(x, sep + y + z))
      }),
      RUNS,
    )
  })

  it('property: distinct part lists get distinct ids, and the same list the same id', () => {
    // Structural identity as contentId sees it: type and value, with -0 as 0.
    const identity = (list: ContentIdPart[]): string =>
      JSON.stringify(
        list.map((p) =>
          p instanceof Uint8Array ? ['b', [...p]] : typeof p === 'bigint' ? ['i', String(p)] : typeof p === 'number' ? ['n', p === 0 ? 0 : p] : ['s', p],
        ),
      )
    fc.assert(
      fc.property(parts, parts, (a, b) => {
        expect(contentId(...a)).toBe(contentId(...a.map((p) => (p instanceof Uint8Array ? Uint8Array.from(p) : p))))
        expect(contentId(...a) === contentId(...b)).toBe(identity(a) === identity(b))
      }),
      RUNS,
    )
  })

  it('property: the UUID form is a valid RFC 9562 version 8 UUID taken from the digest', () => {
    fc.assert(
      fc.property(parts, (list) => {
        const id = contentId.uuid(...list)
        expect(id).toMatch(UUID_V8)
        const bytes = Buffer.from(id.replaceAll('-', ''), 'hex')
        expect(bytes[6]! >> 4).toBe(8) // version
        expect(bytes[8]! >> 6).toBe(0b10) // variant
        expect(isUuid(id)).toBe(true)
        expect(uuidVersion(id)).toBe(8)
        // Every other bit is the digest's.
        const digest = Buffer.from(contentId(...list), 'hex').subarray(0, 16)
        digest[6] = (digest[6]! & 0x0f) | 0x80
        digest[8] = (digest[8]! & 0x3f) | 0x80
        expect(bytes.equals(digest)).toBe(true)
      }),
      RUNS,
    )
  })

  describe('across processes', () => {
    const dir = mkdtempSync(join(tmpdir(), 'idem-content-id-'))
    afterAll(() => rmSync(dir, { recursive: true, force: true }))
    beforeAll(async () => {
      // The module as shipped, bundled from source so the check never runs on a stale dist.
      await build({
        configFile: false,
        logLevel: 'silent',
        build: {
          ssr: resolve(import.meta.dirname, '../../src/data/content-id.ts'),
          outDir: dir,
          emptyOutDir: false,
          minify: false,
          rollupOptions: { output: { format: 'es', entryFileNames: 'content-id.mjs' } },
        },
      })
    })

    it('property: another node process computes the same ids for the same parts', async () => {
      // Parts travel as tagged JSON, so types (and bigint, bytes) survive the trip exactly.
      type Wire = ['s', string] | ['n', number] | ['i', string] | ['b', string]
      const toWire = (p: ContentIdPart): Wire =>
        typeof p === 'string' ? ['s', p] : typeof p === 'number' ? ['n', p] : typeof p === 'bigint' ? ['i', String(p)] : ['b', Buffer.from(p).toString('hex')]
      const lists = fc.sample(parts, { numRuns: 200, seed: RUNS.seed })
      const script = join(dir, 'ids.mjs')
      writeFileSync(
        script,
        `import { readFileSync } from 'node:fs'
import { contentId } from './content-id.mjs'
const decode = ([t, v]) => (t === 'i' ? BigInt(v) : t === 'b' ? new Uint8Array(Buffer.from(v, 'hex')) : v)
const lists = JSON.parse(readFileSync(process.argv[2], 'utf8'))
process.stdout.write(JSON.stringify(lists.map((l) => [contentId(...l.map(decode)), contentId.uuid(...l.map(decode))])))
`,
      )
      const input = join(dir, 'lists.json')
      writeFileSync(input, JSON.stringify(lists.map((l) => l.map(toWire))))
      const { stdout } = await promisify(execFile)(process.execPath, [script, input])
      const theirs = JSON.parse(stdout) as [string, string][]
      expect(theirs).toEqual(lists.map((l) => [contentId(...l), contentId.uuid(...l)]))
    })
  })
})
