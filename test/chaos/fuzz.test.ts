// Fuzz, at volume (100,000+ cases in `npm run chaos`): hostile requests (key header
// values, bodies, content types, paths, methods) on the Fetch middleware never give a
// 5xx, a rejected request runs nothing and stores nothing, and a repeat of a stored
// answer is its replay byte for byte. And hostile store contents: a stored row that was
// corrupted, truncated or replaced gives a clear error (a 500 `outcome-unreadable`
// problem, or a 422 for a changed fingerprint), never a non-idem error and never a
// replay of anything but what the row says; encrypted, any change at all is refused.
import Database from 'better-sqlite3'
import fc from 'fast-check'
import { randomBytes, randomUUID } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { createIdem, encryptedStore } from '../../src/index.js'
import { idempotency } from '../../src/http/fetch/index.js'
import { routingPath } from '../../src/http/routes.js'
import { sqliteStore, type SqliteDatabase } from '../../src/stores/sqlite/index.js'
import { report, scale } from './support/table.js'

const REQUEST_CASES = scale(3_000, 60_000)
const PATH_CASES = scale(1_000, 20_000)
const ROW_CASES = scale(1_000, 12_000)
const SEED = Number(process.env.IDEM_CHAOS_SEED ?? 20261201)

function app(options: { encrypted?: boolean; maxBodyBytes?: number; routes?: string[] } = {}) {
  const db = new Database(':memory:') as unknown as SqliteDatabase
  const plain = sqliteStore({ db })
  plain.migrate()
  const store = options.encrypted ? encryptedStore(plain, { keys: { k1: randomBytes(32) }, current: 'k1' }) : plain
  let runs = 0
  const protect = idempotency({
    idem: createIdem({ store }),
    scope: (request) => request.headers.get('x-account') ?? 'fuzz',
    maxBodyBytes: options.maxBodyBytes ?? 1024,
    ...(options.routes ? { routes: options.routes } : {}),
  })
  const handle = (request: Request) =>
    protect(request, async (req, idem) => {
      runs++
      const bytes = new Uint8Array(await req.arrayBuffer())
      return new Response(bytes.length === 0 ? 'empty' : bytes, {
        status: 201,
        headers: { 'content-type': 'application/octet-stream', 'x-protected': String(idem !== undefined), 'set-cookie': 'session=secret', location: '/orders/1' },
      })
    })
  const keys = () => (db.prepare('SELECT count(*) AS n FROM idem_keys').get() as { n: number }).n
  return { db: db as unknown as Database.Database, handle, runs: () => runs, keys }
}

// Anything a header value may hold (no NUL, CR, LF), and keys shaped like the real thing.
const printable = fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 80 })
const latin1 = fc.string({ unit: fc.integer({ min: 1, max: 255 }).filter((c) => c !== 10 && c !== 13).map((c) => String.fromCharCode(c)), maxLength: 80 })
const keyHeader = fc.oneof(
  fc.constant(undefined),
  printable,
  printable.map((k) => `"${k}"`),
  latin1,
  fc.uuid().map((k) => `"${k}"`),
  fc.array(printable.map((k) => `"${k}"`), { minLength: 2, maxLength: 3 }).map((ks) => ks.join(', ')),
  fc.integer({ min: 250, max: 300 }).map((n) => `"${'k'.repeat(n)}"`),
)
const contentType = fc.oneof(
  fc.constantFrom(undefined, 'application/json', 'application/x-www-form-urlencoded', 'text/plain', 'application/json; charset=utf-16', 'multipart/form-data; boundary=x'),
  latin1,
)
const body = fc.oneof(
  fc.json({ maxDepth: 3 }),
  fc.string({ maxLength: 200 }),
  fc.uint8Array({ maxLength: 1100 }),
  fc.constantFrom('', '{"a":', '[1,2', '{"a":1}}', '1e400', '{"a":"\\ud800"}', 'a=1&a=2&b'),
)
const method = fc.constantFrom('POST', 'PUT', 'PATCH', 'DELETE', 'GET')

/** Builds the request, or undefined when the Fetch API itself refuses the value (it never reaches a server). */
function request(url: string, init: { method: string; key?: string; type?: string; body?: string | Uint8Array; account?: string }): Request | undefined {
  try {
    const headers = new Headers()
    if (init.key !== undefined) headers.set('idempotency-key', init.key)
    if (init.type !== undefined) headers.set('content-type', init.type)
    if (init.account !== undefined) headers.set('x-account', init.account)
    const sendsBody = init.method !== 'GET' && init.body !== undefined
    return new Request(url, { method: init.method, headers, ...(sendsBody ? { body: init.body } : {}) })
  } catch (error) {
    if (error instanceof TypeError) return undefined
    throw error
  }
}

describe('fuzz at volume', () => {
  it(`${REQUEST_CASES.toLocaleString('en-US')} hostile requests: never a 5xx, rejections run nothing, repeats replay`, async ({ task }) => {
    const a = app()
    let fiveXx = 0
    let cases = 0
    let replays = 0
    await fc.assert(
      fc.asyncProperty(method, keyHeader, contentType, body, async (m, key, type, payload) => {
        cases++
        const make = () => request('http://fuzz.test/orders', { method: m, key, type, body: payload })
        const first = make()
        if (first === undefined) return
        const runsBefore = a.runs()
        const keysBefore = a.keys()
        const answer = await a.handle(first)
        if (answer.status >= 500) fiveXx++
        expect(answer.status, `${m} ${String(key).slice(0, 40)}`).toBeLessThan(500)
        if (answer.status === 400 || answer.status === 413) {
          expect(answer.headers.get('content-type')).toBe('application/problem+json')
          expect(a.runs()).toBe(runsBefore)
          expect(a.keys()).toBe(keysBefore)
          return
        }
        if (answer.headers.get('x-protected') !== 'true') return
        // A key used before with another request is a 422 here; a stored answer replays.
        const bytes = Buffer.from(await answer.arrayBuffer())
        const again = await a.handle(make()!)
        if (again.status === 422) return
        expect(again.status).toBe(answer.status)
        expect(again.headers.get('idempotent-replayed')).toBe('true')
        expect(again.headers.get('set-cookie')).toBeNull()
        expect(Buffer.from(await again.arrayBuffer()).equals(bytes)).toBe(true)
        replays++
      }),
      { numRuns: REQUEST_CASES, seed: SEED },
    )
    report(task, { scenario: 'fuzz: key headers, bodies, content types, methods', runs: cases, unit: 'cases', duplicates: 0, lost: 0, unexpected5xx: fiveXx, notes: `${replays} replays checked byte for byte, no Set-Cookie replayed` })
  }, 600_000)

  it(`${PATH_CASES.toLocaleString('en-US')} path spellings: a path that routes to /orders is protected, no 5xx`, async ({ task }) => {
    const a = app({ routes: ['/orders', '/orders/*'] })
    let fiveXx = 0
    let cases = 0
    const segment = fc.oneof(
      fc.constantFrom('orders', 'Orders', 'ORDERS', '%6Frders', '%256Frders', 'o%72ders', '.', '..', '', 'other', '%2e', '%2E%2E', 'orders%2F1', '%ff', '%'),
      fc.string({ unit: fc.constantFrom('o', 'r', 'd', 'e', 's', '%', '2', 'F', '.', '/', '\\', 'A', ';', '?'), maxLength: 12 }),
    )
    const path = fc.array(segment, { minLength: 1, maxLength: 5 }).map((parts) => `/${parts.join('/')}`)
    await fc.assert(
      fc.asyncProperty(path, fc.boolean(), async (p, trailing) => {
        cases++
        const spelled = trailing ? `${p}/` : p
        const made = request(`http://fuzz.test${spelled}`, { method: 'POST', body: 'x' })
        if (made === undefined) return
        const answer = await a.handle(made)
        if (answer.status >= 500) fiveXx++
        expect(answer.status).toBeLessThan(500)
        const routed = routingPath(new URL(made.url).pathname)
        // Fail closed: whatever routes to a protected path needs a key.
        if (routed === '/orders' || routed.startsWith('/orders/')) expect(answer.status, spelled).toBe(400)
      }),
      { numRuns: PATH_CASES, seed: SEED + 1 },
    )
    report(task, { scenario: 'fuzz: path spellings against routes', runs: cases, unit: 'cases', duplicates: 0, lost: 0, unexpected5xx: fiveXx, notes: 'every spelling of a protected path was protected' })
  }, 600_000)

  // What a stored row can turn into.
  const corrupt = (text: string) =>
    fc.oneof(
      fc.nat({ max: text.length }).map((n) => text.slice(0, n)),
      fc.tuple(fc.nat({ max: text.length - 1 }), fc.nat({ max: 20 })).map(([at, n]) => text.slice(0, at) + text.slice(at + 1 + n)),
      fc.tuple(fc.nat({ max: text.length - 1 }), fc.string({ minLength: 1, maxLength: 3 })).map(([at, s]) => text.slice(0, at) + s + text.slice(at + 1)),
      fc.tuple(fc.nat({ max: text.length }), fc.string({ minLength: 1, maxLength: 8 })).map(([at, s]) => text.slice(0, at) + s + text.slice(at)),
      fc.json({ maxDepth: 3 }),
      fc.record({
        status: fc.oneof(fc.integer({ min: -1000, max: 2000 }), fc.string(), fc.constant(null), fc.double()),
        headers: fc.oneof(fc.array(fc.tuple(fc.string(), fc.string()), { maxLength: 3 }), fc.string(), fc.array(fc.anything(), { maxLength: 3 }), fc.constant(null)),
        bodyBase64: fc.oneof(fc.base64String(), fc.string(), fc.constant(null), fc.integer()),
      }).map((row) => JSON.stringify(row)),
      // The current format (2): a flat header list, a text or base64 body.
      fc.record(
        {
          v: fc.oneof(fc.constant(2), fc.constant(1), fc.string()),
          status: fc.oneof(fc.integer({ min: 100, max: 700 }), fc.string()),
          headers: fc.oneof(fc.array(fc.string(), { maxLength: 4 }), fc.array(fc.constantFrom('content-type', 'text/plain', 'x-a', ' b'), { maxLength: 4 })),
          text: fc.oneof(fc.string(), fc.constant(null)),
          base64: fc.oneof(fc.base64String(), fc.string()),
          omittedBodyBytes: fc.oneof(fc.nat(), fc.constant(-1)),
        },
        { requiredKeys: ['v', 'status', 'headers'] },
      ).map((row) => JSON.stringify(row)),
      fc.string({ unit: 'binary', maxLength: 100 }),
    )

  for (const encrypted of [false, true]) {
    it(`${ROW_CASES.toLocaleString('en-US')} corrupted stored rows${encrypted ? ' (encrypted)' : ''}: a clear error or the row's own answer, never a guess`, async ({ task }) => {
      const a = app({ encrypted })
      const update = a.db.prepare('UPDATE idem_keys SET outcome = ? WHERE key = ?')
      const updateFingerprint = a.db.prepare('UPDATE idem_keys SET fingerprint = ? WHERE key = ?')
      const read = a.db.prepare('SELECT outcome, fingerprint FROM idem_keys WHERE key = ?')
      let cases = 0
      let unreadable = 0
      let faithful = 0
      let mismatches = 0
      let wrong = 0
      let fiveXx = 0
      const original = async () => {
        const key = randomUUID()
        const answer = await a.handle(request('http://fuzz.test/orders', { method: 'POST', key: `"${key}"`, body: `payload ${key}` })!)
        expect(answer.status).toBe(201)
        const body = Buffer.from(await answer.arrayBuffer())
        return { key, answer: { status: answer.status, body }, ...(read.get(key) as { outcome: string; fingerprint: string }) }
      }
      const samples = await Promise.all(Array.from({ length: 20 }, original))
      const runsBefore = a.runs()
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(...samples).chain((sample) => fc.tuple(fc.constant(sample), fc.oneof({ weight: 9, arbitrary: corrupt(sample.outcome) }, { weight: 1, arbitrary: corrupt(sample.fingerprint).map((f) => `fp:${f}`) }))),
          async ([sample, mutated]) => {
            cases++
            const fingerprintCase = mutated.startsWith('fp:')
            if (fingerprintCase) updateFingerprint.run(mutated.slice(3), sample.key)
            else update.run(mutated, sample.key)
            try {
              const answer = await a.handle(request('http://fuzz.test/orders', { method: 'POST', key: `"${sample.key}"`, body: `payload ${sample.key}` })!)
              const text = Buffer.from(await answer.arrayBuffer())
              const unchanged = fingerprintCase ? mutated.slice(3) === sample.fingerprint : mutated === sample.outcome
              if (answer.status === 500) {
                fiveXx++
                expect(answer.headers.get('content-type')).toBe('application/problem+json')
                expect(JSON.parse(text.toString('utf8')).code).toBe('outcome-unreadable')
                expect(unchanged).toBe(false)
                unreadable++
                return
              }
              if (answer.status === 422) {
                expect(fingerprintCase && !unchanged).toBe(true)
                mismatches++
                return
              }
              expect(answer.headers.get('idempotent-replayed')).toBe('true')
              // Encrypted, only the untouched row replays; plain, the replay is what the row says.
              if (encrypted) expect(unchanged).toBe(true)
              const said = encrypted || fingerprintCase ? sample.answer : rowSays(JSON.parse(mutated) as StoredRow)
              if (encrypted && !unchanged) wrong++
              expect(answer.status).toBe(said.status)
              expect(text.equals([204, 205, 304].includes(said.status) ? Buffer.alloc(0) : said.body)).toBe(true)
              faithful++
            } finally {
              update.run(sample.outcome, sample.key)
              updateFingerprint.run(sample.fingerprint, sample.key)
            }
          },
        ),
        { numRuns: ROW_CASES, seed: SEED + (encrypted ? 3 : 2) },
      )
      // A row that cannot be read never makes the route run again.
      expect(a.runs()).toBe(runsBefore)
      report(task, {
        scenario: `fuzz: corrupted stored rows${encrypted ? ', encrypted at rest' : ''}`,
        runs: cases,
        unit: 'cases',
        duplicates: wrong,
        lost: 0,
        unexpected5xx: fiveXx - unreadable,
        notes: `${unreadable} outcome-unreadable (500, expected), ${mismatches} 422 for a changed fingerprint, ${faithful} replays of what the row says${encrypted ? ' (only unchanged rows)' : ''}; the route never ran again`,
      })
    }, 600_000)
  }
})

/** A stored row as the HTTP middleware writes it: format 2, or 1. */
type StoredRow = { status: number; v?: 2; text?: string; base64?: string; bodyBase64?: string }

/** What a stored row says the answer is: its status and body bytes. */
function rowSays(row: StoredRow): { status: number; body: Buffer } {
  if (row.v !== 2) return { status: row.status, body: Buffer.from(row.bodyBase64!, 'base64') }
  return { status: row.status, body: row.text === undefined ? Buffer.from(row.base64!, 'base64') : Buffer.from(row.text, 'utf8') }
}
