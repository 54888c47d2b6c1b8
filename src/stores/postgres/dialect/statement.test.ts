import { describe, expect, it } from 'vitest'
import { keyPeekStatements } from './keys.js'
import { inline, quoteLiteral } from './statement.js'

// Quotes the way the driver's escapeLiteral does for plain text.
const quote = (value: string): string => `'${value.replace(/'/g, "''")}'`

describe('inline', () => {
  it('puts each value where its placeholder is: repeated, out of order, two-digit', () => {
    const values = Array.from({ length: 10 }, (_, i) => `v${i + 1}`)
    expect(inline({ text: 'SELECT $2, $1 || $2, $10, $1', values }, quote)).toBe("SELECT 'v2', 'v1' || 'v2', 'v10', 'v1'")
  })

  it('escapes text through the given function and writes whole numbers bare', () => {
    expect(inline({ text: 'SELECT $1, $2', values: ["it's", 5000] }, quote)).toBe("SELECT 'it''s', 5000")
    expect(() => inline({ text: 'SELECT $1', values: [0.5] }, quote)).toThrow(/cannot inline the number 0.5/)
  })

  it('gives the same text on every call for the same statement (the split is cached)', () => {
    const statement = keyPeekStatements('idem', 'table').lookup('acct', "k'1")
    const first = inline(statement, quote)
    expect(inline(statement, quote)).toBe(first)
    expect(first).toBe(`SELECT fingerprint, outcome FROM "idem".idem_keys WHERE scope = 'acct' AND key = 'k''1' AND expires_at > now()`)
  })
})

describe('quoteLiteral', () => {
  it('quotes as node-postgres does: doubled quotes, and E with doubled backslashes when there is one', () => {
    expect(quoteLiteral("it's")).toBe("'it''s'")
    expect(quoteLiteral('a\\b')).toBe(" E'a\\\\b'")
    expect(quoteLiteral("x\\'y")).toBe(" E'x\\\\''y'")
    expect(quoteLiteral('')).toBe("''")
  })

  it('quotes a mebibyte at once', () => {
    const text = "'".repeat(1024 * 1024)
    expect(quoteLiteral(text).length).toBe(2 * text.length + 2)
  })
})
