import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { assertValidKey } from '../core/identity.js'
import { createClient, InvalidOptionError, keyFromIntent } from './index.js'
import { scriptedFetch } from '../../test/client/fake-fetch.js'

const UUID_V8 = /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

describe('keyFromIntent', () => {
  it('gives the same intent the same key, shaped as a UUIDv8 and valid as an Idempotency-Key', async () => {
    const a = await keyFromIntent('checkout', 'cart-9', 3, 'form-1f2e')
    const b = await keyFromIntent('checkout', 'cart-9', 3, 'form-1f2e')
    expect(a).toBe(b)
    expect(a).toMatch(UUID_V8)
    assertValidKey(a)
  })

  it('is a fixed, documented function of its input (a queued key stays valid across releases)', async () => {
    // Computed independently: SHA-256('N'+u32be(8)+'checkout' + 's'+u32be(6)+'cart-9'), first
    // 16 bytes, version nibble 8, variant 10 (Python hashlib gives the same).
    expect(await keyFromIntent('checkout', 'cart-9')).toBe('3a05bc47-825a-8072-a0b8-b0efdbedb2af')
  })

  it('tells apart namespaces, part boundaries, part types and part order', async () => {
    const keys = await Promise.all([
      keyFromIntent('checkout', 'ab', 'c'),
      keyFromIntent('checkout', 'a', 'bc'),
      keyFromIntent('checkout', 'abc'),
      keyFromIntent('invite', 'ab', 'c'),
      keyFromIntent('checkout', 'c', 'ab'),
      keyFromIntent('checkout', 1),
      keyFromIntent('checkout', '1'),
      keyFromIntent('checkoutab', 'c'),
    ])
    expect(new Set(keys).size).toBe(keys.length)
  })

  it('never collides for distinct part lists (property)', async () => {
    const part = fc.oneof(fc.string({ unit: 'grapheme', maxLength: 6 }), fc.integer({ min: -5, max: 5 }))
    await fc.assert(
      fc.asyncProperty(fc.array(part, { minLength: 1, maxLength: 4 }), fc.array(part, { minLength: 1, maxLength: 4 }), async (x, y) => {
        fc.pre(JSON.stringify(x) !== JSON.stringify(y))
        expect(await keyFromIntent('ns', ...x)).not.toBe(await keyFromIntent('ns', ...y))
      }),
      { numRuns: 200 },
    )
  })

  it('turns a double tap into one key on the wire', async () => {
    const { fetch, sent } = scriptedFetch([201])
    const client = createClient({ fetch })
    const formId = 'form-7c1d' // minted when the form was rendered
    const submit = async (): Promise<void> => {
      await client.fetch('http://api.test/orders', { method: 'POST', body: '{}' }, { key: await keyFromIntent('place-order', formId) })
    }
    await Promise.all([submit(), submit()])
    expect(sent).toHaveLength(2)
    expect(sent[0]?.key).toBe(sent[1]?.key)
  })

  it.each<[string, unknown[]]>([
    ['', ['x']],
    ['checkout', []],
    ['checkout', [Number.NaN]],
    ['checkout', [{ id: 1 }]],
  ])('rejects namespace %j with parts %j', async (namespace, parts) => {
    await expect(keyFromIntent(namespace, ...(parts as string[]))).rejects.toBeInstanceOf(InvalidOptionError)
  })
})
