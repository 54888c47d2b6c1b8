/**
 * libpq's keyword/value connection strings (`host=db port=5432 dbname=app`), as the
 * PostgreSQL manual defines them (libpq, "Connection Strings"): settings separated by
 * whitespace, optional spaces around `=`, a value in single quotes when it is empty or
 * holds spaces, and `\` escaping the next character (`\'`, `\\`). pg reads only URLs, so
 * the Postgres store's CLI entry turns these pairs into the query parameters pg reads
 * (stores/postgres/cli-connection.ts); `masked` (credentials.ts) reads them to mask a password.
 */

/** One `keyword=value` setting, with where its value is written in the string. */
export interface LibpqPair {
  keyword: string
  /** The value with its quotes and escapes removed. */
  value: string
  /** The value as written (quotes included): `text.slice(start, end)`. */
  start: number
  end: number
}

/** The settings of a keyword/value string, up to the first mistake, which `error` describes. */
export interface LibpqSettings {
  pairs: LibpqPair[]
  /** Why the string is not a keyword/value string; it quotes nothing of the string, which may hold a password. */
  error?: string
}

const SPACE = /\s/

/**
 * Reads a keyword/value string. A mistake ends the reading: `pairs` are those before it,
 * and a quoted value left open runs to the end of the string (so masking still finds it).
 * @example libpqSettings("host=db password='a b'").pairs // [{ keyword: 'host', value: 'db', … }, { keyword: 'password', value: 'a b', … }]
 */
export function libpqSettings(text: string): LibpqSettings {
  const pairs: LibpqPair[] = []
  let i = 0
  const skipSpace = (): void => {
    while (i < text.length && SPACE.test(text[i]!)) i++
  }
  for (;;) {
    skipSpace()
    if (i >= text.length) return { pairs }
    const keywordAt = i
    while (i < text.length && text[i] !== '=' && !SPACE.test(text[i]!)) i++
    const keyword = text.slice(keywordAt, i)
    skipSpace()
    if (text[i] !== '=') return { pairs, error: `the setting at character ${keywordAt + 1} has no "=" (write keyword=value)` }
    i++
    skipSpace()
    const start = i
    const quoted = text[i] === "'"
    if (quoted) i++
    let value = ''
    while (i < text.length && (quoted ? text[i] !== "'" : !SPACE.test(text[i]!))) {
      if (text[i] === '\\' && i + 1 < text.length) i++
      value += text[i]
      i++
    }
    if (quoted && i >= text.length) {
      pairs.push({ keyword, value, start, end: i })
      return { pairs, error: `the quoted value at character ${start + 1} has no closing "'"` }
    }
    if (quoted) i++
    pairs.push({ keyword, value, start, end: i })
  }
}
