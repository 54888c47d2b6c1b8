import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { headerValue, replayedValue, VALUE_UNITS } from '../../test/support/header-fields.js'
import { storedField, wireValue } from './header-field.js'

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
