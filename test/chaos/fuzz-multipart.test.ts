// Fuzz of multipart bodies (10,000 forms and 20,000 hand-framed bodies in `npm run chaos`)
// on the Fetch middleware. A FormData sent again is encoded afresh, with a new boundary,
// as a client that sends the same form twice does: the retry replays, byte for byte,
// without the route running again. The same key with a changed part (its name,
// filename, media type or bytes, the order of the parts, one part more or less) is a
// 422. Hand-framed bodies under any multipart media type, malformed or not, are never a
// 5xx and replay when sent again as they were; framed again with another boundary, they
// replay too, and with one part header changed they are a 422.
import Database from 'better-sqlite3'
import fc from 'fast-check'
import { randomUUID } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { createIdem } from '../../src/index.js'
import { idempotency } from '../../src/http/fetch/index.js'
import { sqliteStore, type SqliteDatabase } from '../../src/stores/sqlite/index.js'
import { report, scale } from './support/table.js'

const FORM_CASES = scale(300, 10_000)
const FRAMED_CASES = scale(600, 20_000)
const SEED = Number(process.env.IDEM_CHAOS_SEED ?? 20261201)

function app() {
  const db = new Database(':memory:') as unknown as SqliteDatabase
  const store = sqliteStore({ db })
  store.migrate()
  let runs = 0
  const protect = idempotency({ idem: createIdem({ store }), scope: () => 'fuzz' })
  const handle = (request: Request) =>
    protect(request, async () => {
      runs++
      return new Response(`run ${runs}`, { status: 201, headers: { 'content-type': 'text/plain' } })
    })
  return { handle, runs: () => runs }
}

const post = (key: string, body: RequestInit['body'], contentType?: string): Request =>
  new Request('http://fuzz.test/uploads', {
    method: 'POST',
    headers: { 'idempotency-key': `"${key}"`, ...(contentType === undefined ? {} : { 'content-type': contentType }) },
    body,
  })

/** What one send answered: status, replayed or not, the body's text. */
async function outcome(response: Response) {
  return { status: response.status, replayed: response.headers.get('idempotent-replayed') === 'true', text: await response.text() }
}

// One part of a form. Names and filenames leave out what the FormData encoder escapes
// into other legal text (`"` becomes %22, line breaks %0D%0A), and text values leave
// out line breaks (normalised to CRLF): two such forms are the same bytes on the wire.
interface FormPart {
  name: string
  value: string | { filename: string; type: string; bytes: Uint8Array }
}
const TYPES = ['application/pdf', 'image/png', 'text/plain', 'application/octet-stream', 'text/csv']
const label = fc.string({ unit: fc.oneof(fc.constantFrom('a', 'b', 'é', '😀', ' ', ';', '=', '\\', "'", '.'), fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c))), maxLength: 10 }).map((s) => s.replace(/["%]/g, '_'))
const text = fc.string({ unit: 'grapheme', maxLength: 40 }).map((s) => s.replace(/[\r\n]/g, ' '))
const file = fc.record({ filename: label.map((f) => f || 'f'), type: fc.constantFrom(...TYPES), bytes: fc.uint8Array({ maxLength: 600 }) })
const part: fc.Arbitrary<FormPart> = fc.record({ name: label, value: fc.oneof(text, file) })

function formOf(parts: readonly FormPart[]): FormData {
  const form = new FormData()
  for (const { name, value } of parts) {
    if (typeof value === 'string') form.append(name, value)
    else form.append(name, new Blob([value.bytes], { type: value.type }), value.filename)
  }
  return form
}

const same = (a: FormPart, b: FormPart) => JSON.stringify([a.name, a.value instanceof Object ? { ...a.value, bytes: [...a.value.bytes] } : a.value]) === JSON.stringify([b.name, b.value instanceof Object ? { ...b.value, bytes: [...b.value.bytes] } : b.value])

/** One change to one part, or to the order or number of parts: always another form on the wire. */
function change(parts: readonly FormPart[], pick: number, kind: number): { what: string; parts: FormPart[] } {
  const changed = parts.map((p) => ({ ...p, value: typeof p.value === 'string' ? p.value : { ...p.value } }))
  const at = pick % parts.length
  const target = changed[at]!
  const value = target.value
  switch (kind % 6) {
    case 0:
      target.name = `${target.name}x`
      return { what: 'name', parts: changed }
    case 1:
      if (typeof value === 'string') break
      value.filename = `${value.filename}x`
      return { what: 'filename', parts: changed }
    case 2:
      if (typeof value === 'string') break
      value.type = TYPES[(TYPES.indexOf(value.type) + 1 + (pick % (TYPES.length - 1))) % TYPES.length]!
      return { what: 'media type', parts: changed }
    case 3: {
      const other = changed.findIndex((p, i) => i > at && !same(p, target))
      if (other === -1) break
      ;[changed[at], changed[other]] = [changed[other]!, changed[at]!]
      return { what: 'order', parts: changed }
    }
    case 4:
      changed.splice(at, 1)
      return { what: 'one part fewer', parts: changed }
  }
  // The bytes of the part: one byte flipped (a file) or one character more (a text).
  if (typeof value === 'string') target.value = `${value}x`
  else if (value.bytes.length === 0) value.bytes = new Uint8Array([pick & 0xff])
  else {
    const bytes = new Uint8Array(value.bytes)
    const i = pick % bytes.length
    bytes[i] = bytes[i]! ^ (1 + (kind % 255))
    value.bytes = bytes
  }
  return { what: 'bytes', parts: changed }
}

// Pieces of a hand-framed body: part headers of every shape, bytes, and framing that
// looks like a delimiter or breaks one.
const headerLine = fc.oneof(
  fc.constantFrom(
    'Content-Disposition: form-data; name="a"',
    'content-disposition: form-data; name="a"; filename="x.bin"',
    'Content-Disposition: form-data; name="b"; filename*=UTF-8\'\'%C3%A9.txt',
    'Content-Type: text/plain; charset=utf-8',
    'Content-Type: application/json',
    'Content-Transfer-Encoding: base64',
    'Content-Disposition: attachment',
    'X-Other: 1',
    '',
  ),
  fc.string({ maxLength: 30 }),
)
const partBytes = fc.oneof(fc.string({ maxLength: 60 }), fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b).toString('latin1')), fc.constantFrom('--', '\r\n', '\r\n--', '--\r\n', '\r\n\r\n'))
const framedPart = fc.record({ headers: fc.array(headerLine, { maxLength: 3 }), bytes: partBytes })
const boundary = fc.oneof(
  fc.string({ unit: fc.constantFrom('a', 'Z', '0', '-', '_', "'", '(', ')', '+', ',', '.', '/', ':', '=', '?', ' '), minLength: 1, maxLength: 70 }),
  fc.constantFrom('', '"', '--', 'a b', 'é'),
)
// The media types a hand-framed body is sent under: the first is the one a client sends.
const MEDIA_TYPES: Array<(b: string) => string> = [
  (b) => `multipart/form-data; boundary="${b}"`,
  (b) => `multipart/form-data; boundary=${b}`,
  (b) => `Multipart/Form-Data; charset=utf-8; BOUNDARY="${b}"`,
  (b) => `multipart/mixed; boundary="${b}"`,
  () => 'multipart/form-data',
  (b) => `multipart/form-data; boundary="${b}"; boundary=other`,
  () => 'multipart/form-data; boundary=',
  (b) => `multipart/ form-data; boundary="${b}"`,
]

interface Framed {
  preamble: string
  parts: Array<{ headers: string[]; bytes: string }>
  close: boolean
  epilogue: string
}
const framed: fc.Arbitrary<Framed> = fc.record({
  preamble: fc.oneof(fc.constant(''), fc.string({ maxLength: 20 }).map((s) => `${s}\r\n`)),
  parts: fc.array(framedPart, { maxLength: 4 }),
  close: fc.boolean(),
  epilogue: fc.oneof(fc.constant('\r\n'), fc.constant(''), fc.string({ maxLength: 20 })),
})

function frame(message: Framed, b: string): Uint8Array {
  let text = `${message.preamble}--${b}`
  for (const { headers, bytes } of message.parts) text += `\r\n${headers.join('\r\n')}\r\n\r\n${bytes}\r\n--${b}`
  if (message.close) text += `--${message.epilogue}`
  return Buffer.from(text, 'latin1')
}

describe('multipart fuzz', () => {
  it(`${FORM_CASES.toLocaleString('en-US')} forms sent again with a fresh boundary replay; a changed part is a 422`, async ({ task }) => {
    const a = app()
    let cases = 0
    let duplicates = 0
    let lost = 0
    let fiveXx = 0
    const changes: Record<string, number> = {}
    await fc.assert(
      fc.asyncProperty(fc.array(part, { minLength: 1, maxLength: 5 }), fc.nat(), fc.nat(), async (parts, pick, kind) => {
        cases++
        const key = randomUUID()
        const form = formOf(parts)
        const first = await outcome(await a.handle(post(key, form)))
        if (first.status >= 500) fiveXx++
        expect(first.status).toBe(201)
        const runs = a.runs()
        // Encoded afresh: another boundary, the same parts.
        const again = await outcome(await a.handle(post(key, form)))
        if (again.status >= 500) fiveXx++
        if (a.runs() !== runs) duplicates++
        expect(again).toEqual({ ...first, replayed: true })

        const { what, parts: changedParts } = change(parts, pick, kind)
        changes[what] = (changes[what] ?? 0) + 1
        const changed = await outcome(await a.handle(post(key, formOf(changedParts))))
        if (changed.status >= 500) fiveXx++
        // A changed request answered with the first one's outcome: its intent was never applied.
        if (changed.replayed) lost++
        expect(changed.status, what).toBe(422)
        expect(a.runs()).toBe(runs)
      }),
      { numRuns: FORM_CASES, seed: SEED + 10 },
    )
    const counted = Object.entries(changes)
      .sort(([x], [y]) => x.localeCompare(y))
      .map(([what, n]) => `${n} ${what}`)
      .join(', ')
    report(task, { scenario: 'fuzz: multipart forms, a fresh boundary on every retry', runs: cases, unit: 'cases', duplicates, lost, unexpected5xx: fiveXx, notes: `every retry replayed without running; changed parts all 422 (${counted})` })
  }, 600_000)

  it(`${FRAMED_CASES.toLocaleString('en-US')} hand-framed and malformed multipart bodies: never a 5xx, replays across boundaries, a changed part header is a 422`, async ({ task }) => {
    const a = app()
    let cases = 0
    let duplicates = 0
    let lost = 0
    let fiveXx = 0
    let reframed = 0
    let headerChanges = 0
    await fc.assert(
      fc.asyncProperty(framed, boundary, boundary, fc.oneof(fc.constant(0), fc.nat()), fc.nat(), async (message, b1, b2, typePick, partPick) => {
        cases++
        const type = MEDIA_TYPES[typePick % MEDIA_TYPES.length]!(b1)
        const key = randomUUID()
        const body = frame(message, b1)
        const send = (bytes: Uint8Array, contentType: string) => a.handle(post(key, bytes, contentType))
        const first = await outcome(await send(body, type))
        if (first.status >= 500) fiveXx++
        expect(first.status).toBe(201)
        const runs = a.runs()
        const again = await outcome(await send(body, type))
        if (again.status >= 500) fiveXx++
        if (a.runs() !== runs) duplicates++
        expect(again).toEqual({ ...first, replayed: true })

        // Framed again with another boundary: the same parts, when the boundary was one to
        // begin with and neither boundary occurs in what it separates.
        const pieces = [message.preamble, message.epilogue, ...message.parts.flatMap((p) => [...p.headers, p.bytes])]
        const clean = (b: string) => b !== '' && !/["\\]/.test(b) && pieces.every((piece) => !piece.includes(b))
        if (typePick % MEDIA_TYPES.length === 0 && clean(b1) && clean(b2)) {
          reframed++
          const moved = await outcome(await send(frame(message, b2), `multipart/form-data; boundary="${b2}"`))
          if (moved.status >= 500) fiveXx++
          if (a.runs() !== runs) duplicates++
          expect(moved).toEqual({ ...first, replayed: true })
          if (message.parts.length > 0) {
            // One part header changed (its media type, say): another request.
            const parts = message.parts.map((p) => ({ ...p, headers: [...p.headers] }))
            const target = parts[partPick % parts.length]!
            target.headers.push('Content-Type: image/png')
            headerChanges++
            const changed = await outcome(await send(frame({ ...message, parts }, b2), `multipart/form-data; boundary="${b2}"`))
            if (changed.status >= 500) fiveXx++
            if (changed.replayed) lost++
            expect(changed.status).toBe(422)
          }
        }
        expect(a.runs()).toBe(runs)
      }),
      { numRuns: FRAMED_CASES, seed: SEED + 11 },
    )
    report(task, {
      scenario: 'fuzz: hand-framed and malformed multipart bodies',
      runs: cases,
      unit: 'cases',
      duplicates,
      lost,
      unexpected5xx: fiveXx,
      notes: `every repeat replayed byte for byte; ${reframed} framed again with another boundary replayed; ${headerChanges} with a part header changed were 422`,
    })
  }, 600_000)
})
