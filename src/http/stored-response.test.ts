import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { headerFields, headerValue, replayedValue, VALUE_UNITS } from '../../test/support/header-fields.js'
import { replayAnswer } from './replay.js'
import { largestStoredBody, STORED_HEADERS_ROOM, storedField, storeResponse, wireValue, type StoredResponse } from './stored-response.js'

const bytesOf = (body: Uint8Array | string): Buffer => Buffer.from(body)

describe('the stored form (format 2)', () => {
  const headers = ['content-type', 'application/json', 'set-cookie', 'a=1', 'set-cookie', 'b=2']

  it('keeps UTF-8 bodies as text, byte order mark included, and other bytes as base64', () => {
    expect(storeResponse(201, headers, '{"id":7}')).toEqual({ v: 2, status: 201, headers, text: '{"id":7}' })
    expect(storeResponse(200, [], new TextEncoder().encode('é'))).toEqual({ v: 2, status: 200, headers: [], text: 'é' })
    const bom = new Uint8Array([0xef, 0xbb, 0xbf, 0x61])
    expect(bytesOf(replayAnswer(storeResponse(200, [], bom)).body)).toEqual(Buffer.from(bom))
    expect(storeResponse(200, [], new Uint8Array([0, 255]))).toEqual({ v: 2, status: 200, headers: [], base64: 'AP8=' })
  })

  it('replays status, headers (repeated fields apart) and every body byte, marked replayed', () => {
    for (const body of ['{"id":7}', new Uint8Array([0, 255, 1]), new TextEncoder().encode('ünïcode')]) {
      const answer = replayAnswer(JSON.parse(JSON.stringify(storeResponse(201, headers, body))))
      expect(answer.status).toBe(201)
      expect(answer.headers).toEqual([...headers, 'idempotent-replayed', 'true'])
      expect(bytesOf(answer.body)).toEqual(bytesOf(body))
    }
  })

  it('replays only the allowed headers, and never a stored marker twice', () => {
    const stored = storeResponse(200, [...headers, 'idempotent-replayed', 'false'], 'ok')
    expect(replayAnswer(stored, new Set(['content-type', 'idempotent-replayed'])).headers).toEqual(['content-type', 'application/json', 'idempotent-replayed', 'true'])
  })

  it('a lone surrogate in a text body is stored as the bytes that were sent (U+FFFD)', () => {
    expect(bytesOf(replayAnswer(storeResponse(200, [], 'a\ud800')).body)).toEqual(Buffer.from('a\ud800'))
  })
})

describe('a body over maxStoredBodyBytes', () => {
  const allowed = ['content-type', 'application/json', 'location', '/orders/1', 'etag', '"v1"']
  const body = new TextEncoder().encode('{"id":1}')

  it('is stored with its status and allow-listed headers, without the body or the headers describing it, and its size', () => {
    const upTo = (maxBodyBytes: number) => ({ maxBodyBytes, maxOutcomeBytes: Infinity })
    expect(storeResponse(201, allowed, body, { limits: upTo(7) })).toEqual({ v: 2, status: 201, headers: ['location', '/orders/1', 'etag', '"v1"'], text: '', omittedBodyBytes: 8 })
    expect(storeResponse(201, allowed, body, { limits: upTo(8) }).omittedBodyBytes).toBeUndefined()
  })

  it('replays with an empty body and Idempotent-Body-Omitted', () => {
    const replay = replayAnswer(storeResponse(201, allowed, body, { limits: { maxBodyBytes: 0, maxOutcomeBytes: Infinity } }))
    expect(replay.status).toBe(201)
    expect(replay.headers).toEqual(['location', '/orders/1', 'etag', '"v1"', 'idempotent-replayed', 'true', 'idempotent-body-omitted', 'true'])
    expect(bytesOf(replay.body).byteLength).toBe(0)
  })
})

describe('what the store holds bounds the stored form (maxOutcomeBytes)', () => {
  const size = (stored: StoredResponse): number => Buffer.byteLength(JSON.stringify(stored), 'utf8')
  const binary = (bytes: number): Uint8Array => new Uint8Array(bytes).fill(0xff)

  it('a body of largestStoredBody bytes, with headers of STORED_HEADERS_ROOM, is stored whole within the limit; one byte more is not', () => {
    for (const maxOutcomeBytes of [1024 * 1024, 3_932_160, 16 * 1024 * 1024 + 1, 16 * 1024 * 1024 + 2]) {
      const largest = largestStoredBody(maxOutcomeBytes)
      const limits = { maxBodyBytes: largest, maxOutcomeBytes }
      // Headers whose JSON takes the whole room: escaped quotes and Latin-1 take two bytes of it each.
      const value = 'é"'.repeat(Math.floor((STORED_HEADERS_ROOM - 64) / 4))
      const headers = ['content-type', 'application/octet-stream', 'link', value]
      expect(Buffer.byteLength(JSON.stringify(headers), 'utf8')).toBeLessThanOrEqual(STORED_HEADERS_ROOM)
      // Bytes that are not UTF-8 (base64), and text that escapes to more than base64 (control characters).
      for (const body of [binary(largest), new Uint8Array(largest).fill(1)]) {
        const whole = storeResponse(200, headers, body, { limits })
        expect(whole.omittedBodyBytes).toBeUndefined()
        expect(size(whole)).toBeLessThanOrEqual(maxOutcomeBytes)
        // Compared as buffers: a deep equality of 12 MiB takes minutes.
        expect(bytesOf(replayAnswer(whole).body).equals(Buffer.from(body))).toBe(true)
      }
      expect(storeResponse(200, headers, binary(largest + 1), { limits }).omittedBodyBytes).toBe(largest + 1)
    }
  })

  it('a body that would fit maxStoredBodyBytes but not beside large headers is stored without it, and the stored form fits', () => {
    const maxOutcomeBytes = 64 * 1024
    const limits = { maxBodyBytes: largestStoredBody(maxOutcomeBytes), maxOutcomeBytes }
    // Three bytes of JSON a character.
    const headers = ['content-type', 'text/plain', 'link', '报'.repeat(10_000)]
    const stored = storeResponse(201, headers, binary(limits.maxBodyBytes), { limits })
    expect(stored.omittedBodyBytes).toBe(limits.maxBodyBytes)
    expect(stored.headers.filter((_, i) => i % 2 === 0)).toEqual(['link'])
    expect(size(stored)).toBeLessThanOrEqual(maxOutcomeBytes)
    // With a small body the same headers leave room: stored whole.
    expect(storeResponse(201, headers, binary(100), { limits }).omittedBodyBytes).toBeUndefined()
  })

  it('leaves nothing for bodies when the store holds less than the frame and the header room', () => {
    expect(largestStoredBody(STORED_HEADERS_ROOM)).toBe(0)
  })
})

describe('header fields: one rule when stored and when read (#44)', () => {
  it('stores a value without the spaces around it and Unicode text as text; the row reads back', () => {
    const stored = storeResponse(201, ['cache-control', 'no-store ', 'content-disposition', 'attachment; filename="报告.pdf"'], '{}')
    expect(stored.headers).toEqual(['cache-control', 'no-store', 'content-disposition', 'attachment; filename="报告.pdf"'])
    expect(replayAnswer(JSON.parse(JSON.stringify(stored))).headers).toEqual([...stored.headers, 'idempotent-replayed', 'true'])
  })

  it('leaves out a field it cannot store, and says which and why; the rest is stored', () => {
    const leftOut: string[] = []
    const stored = storeResponse(201, ['x-a', 'one\r\ntwo', 'x-b', 'kept', 'X C', 'v', 'x-d', 'a\x00b'], '{}', { leftOut: (name, reason) => leftOut.push(`${name}: ${reason}`) })
    expect(stored.headers).toEqual(['x-b', 'kept'])
    expect(leftOut).toEqual([
      'x-a: its value holds a control character (CR, LF, NUL and the like)',
      'X C: its name is not a token',
      'x-d: its value holds a control character (CR, LF, NUL and the like)',
    ])
  })

  it('reads rows written before: a value with spaces around it (the Lambda front end stored them as returned), Latin-1 obs-text, names in any case', () => {
    const lambdaRow = { v: 2, status: 201, headers: ['cache-control', 'no-store ', 'content-disposition', ' attachment; filename="报告.pdf"'], text: '{}' }
    expect(replayAnswer(lambdaRow).headers).toEqual(['cache-control', 'no-store', 'content-disposition', 'attachment; filename="报告.pdf"', 'idempotent-replayed', 'true'])
    const nodeRow = { status: 200, headers: [['Content-Disposition', 'attachment; filename="\u00e6\u008a\u00a5.pdf"\t']], bodyBase64: '' }
    expect(replayAnswer(nodeRow).headers).toEqual(['content-disposition', 'attachment; filename="\u00e6\u008a\u00a5.pdf"', 'idempotent-replayed', 'true'])
  })

  it('property: whatever fields a reply has, what is stored reads back, each field as the rule makes it, in order', () => {
    fc.assert(
      fc.property(headerFields(VALUE_UNITS.lambda), (fields) => {
        const flat = fields.flatMap(([name, value]) => [name, value])
        let leftOut = 0
        const stored = storeResponse(200, flat, 'ok', { leftOut: () => leftOut++ })
        const expected = fields.flatMap(([name, value]) => {
          const replayed = replayedValue(value)
          return replayed === null ? [] : [name.toLowerCase(), replayed]
        })
        expect(replayAnswer(JSON.parse(JSON.stringify(stored))).headers).toEqual([...expected, 'idempotent-replayed', 'true'])
        expect(leftOut).toBe(fields.length - expected.length / 2)
      }),
      { numRuns: 1_000 },
    )
  })
})

describe('a body in the form it was answered in (a Lambda function: #44)', () => {
  const utf8 = new TextEncoder().encode('{"id":7}')

  it('base64 stays base64, even when the bytes are UTF-8; text stays text', () => {
    expect(storeResponse(201, [], utf8, { form: 'base64' })).toEqual({ v: 2, status: 201, headers: [], base64: Buffer.from(utf8).toString('base64') })
    expect(Buffer.from(replayAnswer(storeResponse(201, [], utf8, { form: 'base64' })).body).equals(utf8)).toBe(true)
    expect(typeof replayAnswer(storeResponse(201, [], utf8, { form: 'base64' })).body).toBe('object')
    expect(replayAnswer(storeResponse(201, [], '{"id":7}', { form: 'text' })).body).toBe('{"id":7}')
  })

  it('text that does not fit as text is left out, never stored as base64 (its replay would be answered as base64)', () => {
    // Control characters take 6 bytes of JSON as text, 4/3 as base64.
    const body = '\u0001'.repeat(1_000)
    const limits = { maxBodyBytes: 10_000, maxOutcomeBytes: 4_000 }
    expect(storeResponse(200, [], body, { limits }).base64).toBeDefined()
    expect(storeResponse(200, [], body, { limits, form: 'text' })).toMatchObject({ text: '', omittedBodyBytes: 1_000 })
  })

  it('a bare value is stored as its JSON, marked, and its replay carries the value', () => {
    const stored = storeResponse(200, ['content-type', 'application/json'], '"Hello from Lambda!"', { form: 'value' })
    expect(stored).toEqual({ v: 2, status: 200, headers: ['content-type', 'application/json'], text: '"Hello from Lambda!"', value: true })
    expect(replayAnswer(JSON.parse(JSON.stringify(stored)))).toMatchObject({ status: 200, body: '"Hello from Lambda!"', value: { json: 'Hello from Lambda!' } })
    expect(replayAnswer(storeResponse(200, [], '{"a":[1]}', { form: 'value' })).value).toEqual({ json: { a: [1] } })
    expect(replayAnswer(storeResponse(200, [], '{"a":[1]}')).value).toBeUndefined()
  })

  it('refuses a value row that was not written so', () => {
    const valid = { v: 2, status: 200, headers: [], text: '"x"', value: true }
    for (const row of [{ ...valid, value: false }, { ...valid, text: 'not json' }, { ...valid, text: undefined, base64: 'AAAA' }, { ...valid, omittedBodyBytes: 3 }]) {
      expect(() => replayAnswer(row), JSON.stringify(row)).toThrow(/unreadable/)
    }
  })
})

describe('storedField: the one rule of the stored form', () => {
  it('keeps a token name in lower case and a value without the spaces and tabs around it', () => {
    expect(storedField('Cache-Control', 'no-store ')).toEqual({ ok: true, name: 'cache-control', value: 'no-store' })
    expect(storedField('x-a', ' \t a \t b\t ')).toEqual({ ok: true, name: 'x-a', value: 'a \t b' })
    expect(storedField('x-a', '')).toEqual({ ok: true, name: 'x-a', value: '' })
    expect(storedField('x-a', '   ')).toEqual({ ok: true, name: 'x-a', value: '' })
  })

  it('keeps Unicode text as text, and the Latin-1 characters of rows written before', () => {
    expect(storedField('content-disposition', 'attachment; filename="报告.pdf"')).toMatchObject({ ok: true, value: 'attachment; filename="报告.pdf"' })
    expect(storedField('x-a', 'caf\u00e9 \u0080\u00ff')).toMatchObject({ ok: true, value: 'caf\u00e9 \u0080\u00ff' })
    expect(storedField('x-a', 'a\ud800')).toMatchObject({ ok: true, value: 'a\ufffd' })
  })

  it('has no stored form for a name that is not a token, or a value holding a control character other than HTAB', () => {
    for (const name of ['', 'x a', 'x:a', 'caf\u00e9', 'x\r\n']) expect(storedField(name, 'v')).toEqual({ ok: false, reason: 'its name is not a token' })
    for (const value of ['a\r\nb', 'a\nb', 'a\rb', 'a\0b', 'a\x01b', 'a\x7fb', 'trailing\n']) expect(storedField('x-a', value)).toMatchObject({ ok: false })
  })

  it('property: a stored value passes the rule again unchanged, and is what the tests say a replay carries', () => {
    fc.assert(
      fc.property(headerValue(VALUE_UNITS.lambda), (value) => {
        const field = storedField('x-a', value)
        expect(field.ok ? field.value : null).toBe(replayedValue(value))
        if (field.ok) expect(storedField(field.name, field.value)).toEqual(field)
      }),
      { numRuns: 2_000 },
    )
  })
})

describe('wireValue: a stored value on a byte wire (Node, Web Headers)', () => {
  it('sends a value holding characters above U+00FF as its UTF-8 bytes, and any other as it is', () => {
    const value = 'attachment; filename="报告.pdf"'
    expect(Buffer.from(wireValue(value), 'latin1').toString('utf8')).toBe(value)
    expect(wireValue('no-store')).toBe('no-store')
    expect(wireValue('caf\u00e9')).toBe('caf\u00e9')
  })

  it('property: what it gives every platform takes (one byte a character), and a value above Latin-1 reads back as its text', () => {
    fc.assert(
      fc.property(headerValue(VALUE_UNITS.lambda), (value) => {
        const field = storedField('x-a', value)
        if (!field.ok) return
        const wire = wireValue(field.value)
        expect(/^[\t\x20-\x7e\x80-\xff]*$/.test(wire)).toBe(true)
        expect(() => new Headers([['x-a', wire]])).not.toThrow()
        if ([...field.value].some((c) => c.codePointAt(0)! > 0xff)) expect(Buffer.from(wire, 'latin1').toString('utf8')).toBe(field.value)
        else expect(wire).toBe(field.value)
      }),
      { numRuns: 2_000 },
    )
  })
})
