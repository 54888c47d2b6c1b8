import canonicalize from 'canonicalize'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { fingerprintRequest } from './request-fingerprint.js'

const json = (body: string | Uint8Array, extra: Partial<Parameters<typeof fingerprintRequest>[0]> = {}) =>
  fingerprintRequest({ method: 'POST', route: '/orders', body, contentType: 'application/json; charset=utf-8', ...extra })

/** Serialises a value with shuffled key order and random whitespace. */
function reshape(value: unknown, random: () => number): string {
  const space = () => [' ', '', '\n', '\t', '  '][Math.floor(random() * 5)]!
  if (Array.isArray(value)) return `[${space()}${value.map((v) => reshape(v, random)).join(`,${space()}`)}${space()}]`
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).sort(() => random() - 0.5)
    return `{${space()}${entries.map(([k, v]) => `${JSON.stringify(k)}${space()}:${space()}${reshape(v, random)}`).join(`,${space()}`)}${space()}}`
  }
  return JSON.stringify(value)
}

const jsonObject = fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 3 }), { minKeys: 1, maxKeys: 6 })

describe('fingerprintRequest', () => {
  it('JSON the canonicaliser refuses is fingerprinted as bytes, never thrown: lone surrogates, 1e400, deep nesting', () => {
    const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`
    for (const body of ['{"name":"\\ud800"}', '{"n":1e400}', '[-1e999]', deep, '{"a":"\\udc00\\ud800"}']) {
      const fingerprint = json(body)
      expect(fingerprint).toMatch(/^[0-9a-f]{64}$/)
      expect(json(body)).toBe(fingerprint)
      // The same as the raw bytes under any other media type.
      expect(fingerprintRequest({ method: 'POST', route: '/orders', body, contentType: 'text/plain' })).toBe(fingerprint)
    }
    // Bytes compare exactly: the same refused payload with other whitespace is another request.
    expect(json('{"name": "\\ud800"}')).not.toBe(json('{"name":"\\ud800"}'))
  })

  it('property: any string as a JSON body gives a fingerprint, never an error', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: 'binary' }), fc.json(), fc.string({ unit: 'grapheme' })), (body) => {
        expect(json(body)).toMatch(/^[0-9a-f]{64}$/)
        expect(json(body, { fields: ['a.b'] })).toMatch(/^[0-9a-f]{64}$/)
      }),
      { numRuns: 2_000 },
    )
  })

  it('property: JSON key order and whitespace never change the fingerprint', () => {
    fc.assert(
      fc.property(jsonObject, fc.integer(), (value, seed) => {
        let state = seed
        const random = () => ((state = (state * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff)
        expect(json(reshape(value, random))).toBe(json(JSON.stringify(value)))
      }),
      { numRuns: 500 },
    )
  })

  it('property: JSON as bytes fingerprints as the same text does, canonical (counted as sent) or not (canonicalised)', () => {
    const bytes = (text: string) => new Uint8Array(Buffer.from(text, 'utf8'))
    fc.assert(
      fc.property(jsonObject, fc.integer(), (value, seed) => {
        let state = seed
        const random = () => ((state = (state * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff)
        const canonical = canonicalize(value)!
        const reshaped = reshape(value, random)
        expect(json(bytes(canonical))).toBe(json(canonical))
        expect(json(bytes(reshaped))).toBe(json(canonical))
        expect(json(bytes(reshaped))).toBe(json(reshaped))
      }),
      { numRuns: 500 },
    )
  })

  it('property: changing any value changes the fingerprint', () => {
    fc.assert(
      fc.property(jsonObject, fc.jsonValue({ maxDepth: 2 }), fc.nat(), (value, replacement, pick) => {
        const keys = Object.keys(value)
        const key = keys[pick % keys.length]!
        const changed = { ...value, [key]: replacement }
        fc.pre(JSON.stringify(JSON.parse(JSON.stringify(changed))[key]) !== JSON.stringify(JSON.parse(JSON.stringify(value))[key]))
        expect(json(JSON.stringify(changed))).not.toBe(json(JSON.stringify(value)))
      }),
      { numRuns: 500 },
    )
  })

  it('counts method and route', () => {
    expect(json('{}')).not.toBe(json('{}', { method: 'PATCH' }))
    expect(json('{}')).not.toBe(json('{}', { route: '/refunds' }))
    expect(json('{}')).toBe(json('{}', { method: 'post' }))
  })

  it('compares form bodies as pairs sorted by name: names in any order, the values of one name in theirs', () => {
    const form = (body: string) => fingerprintRequest({ method: 'POST', route: '/o', body, contentType: 'application/x-www-form-urlencoded' })
    expect(form('amount=5&currency=eur')).toBe(form('currency=eur&amount=5'))
    expect(form('tier=gold&tier=basic')).not.toBe(form('tier=basic&tier=gold'))
    expect(form('tier=gold&region=eu&tier=basic')).toBe(form('region=eu&tier=gold&tier=basic'))
    expect(form('amount=5&currency=eur')).not.toBe(form('amount=6&currency=eur'))
    expect(form('a=b%26c')).not.toBe(form('a=b&c='))
  })

  it('property: moving names around never counts; swapping two values of one name always does', () => {
    const name = fc.constantFrom('a', 'b', 'c', 'tier')
    const pairs = fc.array(fc.tuple(name, fc.string({ maxLength: 4 })), { minLength: 1, maxLength: 8 })
    const encode = (list: Array<[string, string]>) => new URLSearchParams(list).toString()
    const form = (list: Array<[string, string]>) => fingerprintRequest({ method: 'POST', route: '/o', query: encode(list) })
    fc.assert(
      fc.property(pairs, fc.nat(), (list, seed) => {
        // Grouped by name in another order of names, each name's values in their order.
        const names = [...new Set(list.map(([n]) => n))].sort(() => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) % 3) - 1)
        expect(form(names.flatMap((n) => list.filter(([m]) => m === n)))).toBe(form(list))
        const at = list.findIndex(([n, v], i) => list.some(([m, w], j) => j > i && m === n && w !== v))
        fc.pre(at !== -1)
        const other = list.findIndex(([m, w], j) => j > at && m === list[at]![0] && w !== list[at]![1])
        const swapped = [...list]
        ;[swapped[at], swapped[other]] = [swapped[other]!, swapped[at]!]
        expect(form(swapped)).not.toBe(form(list))
      }),
      { numRuns: 300 },
    )
  })

  it('compares a form or query whose escapes are not UTF-8 as sent: decoded, %E9 and %E8 would both be U+FFFD', () => {
    const form = (body: string) => fingerprintRequest({ method: 'POST', route: '/o', body, contentType: 'application/x-www-form-urlencoded' })
    const query = (q: string) => fingerprintRequest({ method: 'POST', route: '/o', query: q })
    expect(form('city=K%F6ln')).not.toBe(form('city=K%F5ln'))
    expect(form('city=K%F6ln')).toBe(form('city=K%F6ln'))
    expect(form('city=K%F6ln')).toBe(fingerprintRequest({ method: 'POST', route: '/o', body: 'city=K%F6ln', contentType: 'text/plain' }))
    expect(query('name=Ren%E9')).not.toBe(query('name=Ren%E8'))
    expect(query('name=Ren%E9')).toBe(query('name=Ren%E9'))
    expect(query('a=%E9')).not.toBe(query('a=%EF%BF%BD'))
    // UTF-8 escapes are decoded as before.
    expect(query('name=Ren%C3%A9&x=1')).toBe(query('x=1&name=Ren%C3%A9'))
  })

  it('compares other bodies, and JSON that does not parse, as bytes', () => {
    const bytes = (body: string | Uint8Array, contentType = 'application/octet-stream') =>
      fingerprintRequest({ method: 'POST', route: '/o', body, contentType })
    expect(bytes('{"a":1}')).not.toBe(bytes('{ "a": 1 }'))
    expect(bytes(new Uint8Array([1, 2, 3]))).toBe(bytes(new Uint8Array([1, 2, 3])))
    expect(json('{"a":')).not.toBe(json('{"a": '))
    expect(bytes('')).toBe(fingerprintRequest({ method: 'POST', route: '/o' }))
  })

  it('keeps part boundaries unambiguous', () => {
    expect(fingerprintRequest({ method: 'POST', route: '/ab' })).not.toBe(fingerprintRequest({ method: 'POSTA', route: '/b' }))
  })

  it('counts query parameters as pairs sorted by name; an empty query counts as none', () => {
    const query = (q?: string) => fingerprintRequest({ method: 'POST', route: '/orders', query: q, body: '{"a":1}', contentType: 'application/json' })
    expect(query('dry_run=true&notify=no')).toBe(query('notify=no&dry_run=true'))
    expect(query('dry_run=true')).not.toBe(query('dry_run=false'))
    expect(query('dry_run=true')).not.toBe(query())
    expect(query('')).toBe(query())
    expect(query('tier=gold&tier=basic')).not.toBe(query('tier=basic&tier=gold'))
    expect(query('q=a%20b')).toBe(query('q=a+b'))
  })

  it('compares only the chosen fields', () => {
    const pick = (body: string) => json(body, { fields: ['amount', 'customer.id'] })
    expect(pick('{"amount":5,"customer":{"id":"c1","name":"A"},"note":"x"}')).toBe(pick('{"note":"y","customer":{"name":"B","id":"c1"},"amount":5}'))
    expect(pick('{"amount":5,"customer":{"id":"c1"}}')).not.toBe(pick('{"amount":5,"customer":{"id":"c2"}}'))
    expect(pick('{"amount":null}')).not.toBe(pick('{}'))
  })
})

/** A FormData encoded as fetch encodes it: a fresh boundary on every call. */
async function encode(form: FormData): Promise<{ body: Uint8Array; contentType: string }> {
  const request = new Request('http://encode.test/', { method: 'POST', body: form })
  return { body: new Uint8Array(await request.arrayBuffer()), contentType: request.headers.get('content-type')! }
}

const multipart = (encoded: { body: Uint8Array | string; contentType: string }) => fingerprintRequest({ method: 'POST', route: '/upload', ...encoded })

function upload(change: Partial<{ name: string; filename: string; type: string; bytes: number[]; reversed: boolean }> = {}): FormData {
  const form = new FormData()
  const parts: Array<() => void> = [
    () => form.append('claim', 'C-1'),
    () => form.append(change.name ?? 'scan', new Blob([new Uint8Array(change.bytes ?? [0x25, 0xff, 0x00])], { type: change.type ?? 'application/pdf' }), change.filename ?? 'scan.pdf'),
  ]
  for (const add of change.reversed ? parts.reverse() : parts) add()
  return form
}

describe('multipart bodies', () => {
  it('the same form sent again, with a fresh boundary, fingerprints the same', async () => {
    const [a, b] = [await encode(upload()), await encode(upload())]
    expect(a.contentType).not.toBe(b.contentType)
    expect(Buffer.from(a.body).equals(Buffer.from(b.body))).toBe(false)
    expect(multipart(a)).toBe(multipart(b))
    // Whatever the case of the media type and its other parameters.
    expect(multipart({ body: a.body, contentType: `Multipart/Form-Data; charset=utf-8; ${a.contentType.split('; ')[1]}` })).toBe(multipart(a))
  })

  it('a changed name, filename, part media type, part bytes or order of parts is another request', async () => {
    const base = multipart(await encode(upload()))
    for (const change of [{ name: 'scan2' }, { filename: 'scan2.pdf' }, { type: 'image/png' }, { bytes: [0x25, 0xff, 0x01] }, { bytes: [0x25, 0xff] }, { reversed: true }]) {
      expect(multipart(await encode(upload(change))), JSON.stringify(change)).not.toBe(base)
    }
  })

  it('counts the multipart subtype, the preamble and the epilogue; not the boundary', () => {
    const body = (boundary: string, preamble = '', epilogue = '') =>
      `${preamble}--${boundary}\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n--${boundary}--\r\n${epilogue}`
    const send = (boundary: string, preamble?: string, epilogue?: string, type = 'multipart/form-data') =>
      multipart({ body: body(boundary, preamble, epilogue), contentType: `${type}; boundary="${boundary}"` })
    expect(send('x1')).toBe(send('another-boundary'))
    expect(send('x1', 'preamble\r\n')).toBe(send('y2', 'preamble\r\n'))
    expect(send('x1', 'preamble\r\n')).not.toBe(send('x1'))
    expect(send('x1', '', 'epilogue')).not.toBe(send('x1'))
    expect(send('x1', '', '', 'multipart/mixed')).not.toBe(send('x1'))
  })

  it('is compared as bytes without a boundary, without a delimiter, or with a media type that does not parse; never throws', () => {
    const bytes = (body: string) => fingerprintRequest({ method: 'POST', route: '/upload', body, contentType: 'application/octet-stream' })
    const body = '--b\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n--b--'
    for (const contentType of ['multipart/form-data', 'multipart/form-data; boundary=', 'multipart/form-data; boundary=zz', 'multipart/ form-data; boundary=b', 'multipart/form-data; boundary=b'.replace('/', '')]) {
      expect(multipart({ body, contentType }), contentType).toBe(bytes(body))
    }
    expect(multipart({ body, contentType: 'multipart/form-data; boundary=b' })).not.toBe(bytes(body))
  })

  it('property: any body under any multipart media type gives a fingerprint, never an error; a boundary swap never counts', () => {
    const boundary = fc.string({ unit: fc.constantFrom('a', 'b', '-', '_', "'", '0'), minLength: 1, maxLength: 8 })
    const piece = fc.oneof(fc.string({ maxLength: 20 }), fc.constantFrom('\r\n', '--', 'Content-Type: text/plain', '\r\n\r\n', '\ud800'))
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 6 }), boundary, boundary, fc.string({ maxLength: 30 }), (pieces, b1, b2, type) => {
        fc.pre(pieces.every((p) => !p.includes(b1) && !p.includes(b2)) && !b1.includes(b2) && !b2.includes(b1))
        const send = (b: string) => multipart({ body: `--${b}${pieces.join(`\r\n--${b}`)}`, contentType: `multipart/form-data; boundary="${b}"` })
        expect(send(b1)).toMatch(/^[0-9a-f]{64}$/)
        expect(send(b1)).toBe(send(b2))
        expect(multipart({ body: pieces.join(''), contentType: `multipart/${type}` })).toMatch(/^[0-9a-f]{64}$/)
      }),
      { numRuns: 1_000 },
    )
  })
})

// Fingerprints are stored with keys for up to the retention time: a release that
// computed them differently would answer every retry in flight with 422. These values
// were computed by the first release (v1 encoding) and must never change.
describe('the v1 encoding', () => {
  it('gives the same fingerprints as the first release', () => {
    expect(fingerprintRequest({ method: 'post', route: '/orders', body: '{"b":"é","a":1}', contentType: 'application/json' })).toBe(
      'd6b003d687cebc78456155d2ac211637efbfb8e618dbc0188ad7261523988ebc',
    )
    expect(fingerprintRequest({ method: 'PUT', route: '/files/1', body: new Uint8Array([0, 255, 1]), contentType: 'application/octet-stream' })).toBe(
      '0a7aab4acbc9e4361d664e8827ef952e2882e8640e94b2566b73fa53025746c0',
    )
    expect(fingerprintRequest({ method: 'POST', route: '/x' })).toBe('c2f63f4210216720e050b01835268196e77e8cca24c01ef7cdcd7ce26c48802e')
    // A request without a query fingerprints as it did before queries were counted.
    expect(fingerprintRequest({ method: 'POST', route: '/x', query: '' })).toBe('c2f63f4210216720e050b01835268196e77e8cca24c01ef7cdcd7ce26c48802e')
    // Pairs with unique names (and repeated ones already in order) encode as they did
    // before the values of a repeated name kept their order.
    expect(fingerprintRequest({ method: 'POST', route: '/orders', body: 'currency=eur&amount=5', contentType: 'application/x-www-form-urlencoded' })).toBe(
      '0a5dce5732a9be1c2cbe4c6a00a78a9737fdfca12114d9cb2b048e6862a8db7c',
    )
    expect(fingerprintRequest({ method: 'POST', route: '/orders', query: 'notify=no&dry_run=true', body: '{"a":1}', contentType: 'application/json' })).toBe(
      'e4dc631a3e6fe2fc907e3dd9291cafa19f0d89444dfe6b4840dfb19fc64673ac',
    )
    expect(fingerprintRequest({ method: 'POST', route: '/orders', query: 'a=1&a=2&b=x', body: 'a=1&a=2', contentType: 'application/x-www-form-urlencoded' })).toBe(
      'ee822635bd7ad6fefc4fb6b639a88187a9ff6f3f49fedb31f063992a85770951',
    )
  })
})
