import { describe, expect, it } from 'vitest'
import { libpqSettings } from './libpq.js'

const read = (text: string) => libpqSettings(text).pairs.map(({ keyword, value }) => [keyword, value])

describe("libpq's keyword/value connection strings", () => {
  it('reads settings separated by whitespace, with optional spaces around =', () => {
    expect(read('host=db  port = 5432\tuser=app\n dbname=app')).toEqual([['host', 'db'], ['port', '5432'], ['user', 'app'], ['dbname', 'app']])
    expect(libpqSettings('host=db').error).toBeUndefined()
  })

  it("reads quoted values, \\' and \\\\ in them, and an empty one", () => {
    expect(read("password='a b' options='-c search_path=x' application_name='it\\'s' passfile='C:\\\\pg' sslcert=''")).toEqual([
      ['password', 'a b'],
      ['options', '-c search_path=x'],
      ['application_name', "it's"],
      ['passfile', 'C:\\pg'],
      ['sslcert', ''],
    ])
  })

  it('takes a backslash in an unquoted value as an escape, as libpq does', () => {
    expect(read('password=a\\ b user=x')).toEqual([['password', 'a b'], ['user', 'x']])
  })

  it('gives where each value is written, quotes included', () => {
    const text = "host=db password = 'a b'"
    const [, password] = libpqSettings(text).pairs
    expect(text.slice(password!.start, password!.end)).toBe("'a b'")
  })

  it('says where a setting has no = or a quote is not closed, quoting nothing of the string', () => {
    expect(libpqSettings('host=db s3cret')).toEqual({ pairs: [{ keyword: 'host', value: 'db', start: 5, end: 7 }], error: 'the setting at character 9 has no "=" (write keyword=value)' })
    const open = libpqSettings("host=db password='s3cret")
    expect(open.error).toBe(`the quoted value at character 18 has no closing "'"`)
    expect(open.pairs.at(-1)).toMatchObject({ keyword: 'password', value: 's3cret', end: 24 })
  })
})
