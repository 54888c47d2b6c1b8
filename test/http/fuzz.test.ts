import fc from 'fast-check'
import net from 'node:net'
import { afterAll, describe, expect, it } from 'vitest'
import { appState } from './support/app.js'
import { postgresBackend } from './support/backends.js'
import { expressFrontEnd, fastifyFrontEnd, fetchFrontEnd, frontEnds, honoFrontEnd, koaFrontEnd, type Call } from './support/frontends.js'

// Bad input on the header and body paths: never a 500, and a request idem rejects
// (400 / 413, or the server's own 400 / 431 before idem sees it) neither runs the
// route nor leaves a key in idem_keys.

const backend = await postgresBackend('idem_http_fuzz')
const MAX_BODY = 256

const printable = fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 300 })
// Anything a Headers value may hold: every byte but NUL, CR and LF (obs-text included).
const latin1 = fc.string({
  unit: fc.integer({ min: 1, max: 255 }).filter((c) => c !== 10 && c !== 13).map((c) => String.fromCharCode(c)),
  maxLength: 300,
})
const keyValue = fc.oneof(
  printable,
  printable.map((k) => `"${k}"`),
  fc.array(printable.map((k) => `"${k}"`), { minLength: 2, maxLength: 4 }).map((ks) => ks.join(', ')),
  printable.map((k) => `"${k}";v=1`),
  latin1,
  latin1.map((k) => `"${k}"`),
  fc.integer({ min: 256, max: 20_000 }).map((n) => `"${'k'.repeat(n)}"`),
  fc.uuid().map((k) => `"${k}"`),
)
const keyFields = fc.oneof(
  { weight: 1, arbitrary: fc.constant(undefined) },
  { weight: 6, arbitrary: keyValue },
  { weight: 2, arbitrary: fc.array(keyValue, { minLength: 2, maxLength: 3 }) },
)
const contentType = fc.constantFrom('application/json', 'application/problem+json', 'application/x-www-form-urlencoded', 'text/plain', undefined)
const body = fc.oneof(
  fc.json({ maxDepth: 3 }),
  fc.string({ maxLength: 300 }),
  fc.constantFrom('{"a":', '[1,2', '{"a":1}}', 'null', '', '\u0000', '{"a":NaN}'),
  fc.string({ unit: 'binary', maxLength: MAX_BODY + 50 }),
)

/** What fast-check draws: one request to `/json`. */
const requestArbitrary = fc.record({ key: keyFields, contentType, body })

afterAll(() => backend?.close())

describe.skipIf(backend === undefined)('fuzzing the header and body paths (Postgres)', () => {
  for (const frontEnd of [fetchFrontEnd, honoFrontEnd]) {
    it(`${frontEnd.name}: random keys, duplicates, lists, huge values and bad JSON never give a 500 or a stray key`, async () => {
      const state = appState()
      const client = await frontEnd.start(backend!, { maxBodyBytes: MAX_BODY }, state)
      await fc.assert(
        fc.asyncProperty(requestArbitrary, async ({ key, contentType, body }) => {
          const call: Call = { path: '/json', key, contentType, body }
          const keysBefore = await backend!.countKeys()
          const runsBefore = state.runs['/json'] ?? 0
          let response: Response
          try {
            response = await client.send(call)
          } catch (error) {
            // A value the Headers class itself refuses never reaches any server.
            if (error instanceof TypeError) return
            throw error
          }
          expect(response.status).not.toBe(500)
          expect([200, 400, 409, 413, 422]).toContain(response.status)
          if (response.headers.get('content-type') === 'application/problem+json' && [400, 413].includes(response.status)) {
            expect(await backend!.countKeys()).toBe(keysBefore)
            expect(state.runs['/json'] ?? 0).toBe(runsBefore)
          }
        }),
        { numRuns: 150, seed: 20_261_130 },
      )
      await client.close()
    })
  }

  for (const frontEnd of [expressFrontEnd, koaFrontEnd, fastifyFrontEnd]) {
    it(`${frontEnd.name}: random header bytes over a real socket never give a 500 or a stray key`, async () => {
      const state = appState()
      const client = await frontEnd.start(backend!, { maxBodyBytes: MAX_BODY }, state)
      const rawKey = fc.oneof(latin1, fc.string({ unit: 'binary', maxLength: 300 }).map((s) => s.replace(/[\r\n]/g, '')), keyValue)
      await fc.assert(
        fc.asyncProperty(fc.array(rawKey, { minLength: 0, maxLength: 3 }), contentType, body, async (keys, type, text) => {
          const keysBefore = await backend!.countKeys()
          const runsBefore = state.runs['/json'] ?? 0
          const answer = await rawRequest(client.port!, keys, type, text)
          expect(answer.status).not.toBe(500)
          expect([200, 400, 409, 413, 422, 431]).toContain(answer.status)
          if ([400, 413, 431].includes(answer.status) && !answer.fromRoute) {
            expect(await backend!.countKeys()).toBe(keysBefore)
            expect(state.runs['/json'] ?? 0).toBe(runsBefore)
          }
        }),
        { numRuns: 100, seed: 20_261_130 },
      )
      await client.close()
    })
  }
})

/**
 * Sends a request byte for byte (latin1), with each key as its own header field, and
 * reads the status line. `fromRoute` tells the route's own answers (`{"bytes":…}`,
 * `{"error":"invalid JSON"}`) from idem's problems and the server's own errors.
 */
async function rawRequest(port: number, keys: string[], type: string | undefined, body: string): Promise<{ status: number; fromRoute: boolean }> {
  const bytes = Buffer.from(body, 'utf8')
  const head = [
    'POST /json HTTP/1.1',
    'Host: 127.0.0.1',
    ...keys.map((key) => `Idempotency-Key: ${key}`),
    ...(type === undefined ? [] : [`Content-Type: ${type}`]),
    `Content-Length: ${bytes.length}`,
    'Connection: close',
  ]
  const text = await new Promise<string>((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1')
    let received = ''
    socket.setTimeout(10_000, () => socket.destroy(new Error('no answer within 10 s')))
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')))
    socket.on('close', () => resolve(received))
    socket.on('error', (error: NodeJS.ErrnoException) => (error.code === 'ECONNRESET' && received !== '' ? resolve(received) : reject(error)))
    // Not end(): Node's server aborts a request whose client half-closes before the answer.
    socket.write(Buffer.concat([Buffer.from(`${head.join('\r\n')}\r\n\r\n`, 'latin1'), bytes]))
  })
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1])
  const answer = text.slice(text.indexOf('\r\n\r\n') + 4)
  return { status, fromRoute: /^\{"(bytes|error)":(\d+|"invalid JSON")\}$/.test(answer) }
}

// JSON text as a hostile client writes it: valid JSON, then made awkward. Lone
// surrogates (escaped, so they survive UTF-8), numbers past a double, integers past
// 2^53, duplicate keys, nesting far deeper than any canonicaliser recurses.
const hostileJson = fc.oneof(
  fc.json({ maxDepth: 4 }),
  fc.json().map((json) => `{"name":"\\ud800","v":${json}}`),
  fc.constantFrom('{"name":"\\ud800"}', '"\\udc00"', '{"a":"\\ud83d"}', '["\\udfff\\ud800"]', '{"\\ud800":1}'),
  fc.constantFrom('1e400', '-1e309', '{"n":1e999}', '[123456789012345678901234567890]', '{"n":-0.0000000000000000000000001e-400}'),
  fc.tuple(fc.json(), fc.json()).map(([a, b]) => `{"a":${a},"a":${b}}`),
  fc.integer({ min: 1_000, max: 60_000 }).map((depth) => `${'['.repeat(depth)}${']'.repeat(depth)}`),
  fc.integer({ min: 1_000, max: 20_000 }).map((depth) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`),
)

describe.skipIf(backend === undefined)('fuzzing JSON bodies on every adapter (Postgres)', () => {
  for (const frontEnd of frontEnds) {
    it(`${frontEnd.name}: any JSON text, however hostile, never gives a 5xx, and a retry replays the first answer`, async () => {
      const state = appState()
      const client = await frontEnd.start(backend!, { maxBodyBytes: 512 * 1024 }, state)
      let n = 0
      await fc.assert(
        fc.asyncProperty(hostileJson, async (body) => {
          const key = `"json-${frontEnd.name}-${n++}-${Date.now()}"`
          const call: Call = { path: '/json', key, contentType: 'application/json', body }
          const first = await client.send(call)
          expect(first.status, body.slice(0, 80)).toBeLessThan(500)
          const again = await client.send(call)
          expect(again.status).toBe(first.status)
          if (first.status === 200) expect(again.headers.get('idempotent-replayed')).toBe('true')
        }),
        { numRuns: 80, seed: 20_261_201 },
      )
      expect(state.runs['/json'] ?? 0).toBeLessThanOrEqual(80)
      await client.close()
    })
  }
})
