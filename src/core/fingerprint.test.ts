import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { fingerprintRequest, fingerprintValue } from './fingerprint.js'

const json = (body: string, extra: Partial<Parameters<typeof fingerprintRequest>[0]> = {}) =>
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

  it('compares form bodies as sorted pairs', () => {
    const form = (body: string) => fingerprintRequest({ method: 'POST', route: '/o', body, contentType: 'application/x-www-form-urlencoded' })
    expect(form('amount=5&currency=eur')).toBe(form('currency=eur&amount=5'))
    expect(form('a=1&a=2')).toBe(form('a=2&a=1'))
    expect(form('amount=5&currency=eur')).not.toBe(form('amount=6&currency=eur'))
    expect(form('a=b%26c')).not.toBe(form('a=b&c='))
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

  it('counts query parameters as sorted pairs; an empty query counts as none', () => {
    const query = (q?: string) => fingerprintRequest({ method: 'POST', route: '/orders', query: q, body: '{"a":1}', contentType: 'application/json' })
    expect(query('dry_run=true&notify=no')).toBe(query('notify=no&dry_run=true'))
    expect(query('dry_run=true')).not.toBe(query('dry_run=false'))
    expect(query('dry_run=true')).not.toBe(query())
    expect(query('')).toBe(query())
    expect(query('a=1&a=2')).toBe(query('a=2&a=1'))
    expect(query('q=a%20b')).toBe(query('q=a+b'))
  })

  it('compares only the chosen fields', () => {
    const pick = (body: string) => json(body, { fields: ['amount', 'customer.id'] })
    expect(pick('{"amount":5,"customer":{"id":"c1","name":"A"},"note":"x"}')).toBe(pick('{"note":"y","customer":{"name":"B","id":"c1"},"amount":5}'))
    expect(pick('{"amount":5,"customer":{"id":"c1"}}')).not.toBe(pick('{"amount":5,"customer":{"id":"c2"}}'))
    expect(pick('{"amount":null}')).not.toBe(pick('{}'))
  })
})

describe('fingerprintValue', () => {
  it('is canonical and refuses values without a JSON form', () => {
    expect(fingerprintValue({ a: 1, b: [1, 2] })).toBe(fingerprintValue({ b: [1, 2], a: 1 }))
    expect(fingerprintValue({ a: 1 })).not.toBe(fingerprintValue({ a: 2 }))
    expect(() => fingerprintValue(undefined)).toThrow(TypeError)
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
    expect(fingerprintValue({ z: [1, 2], a: null })).toBe('4c1aef3e18346d3188d6d0be22ee50fde7089ba85ce78c1c1e5b081f88ca67f9')
  })
})
