import { libpqSettings } from './libpq.js'

/**
 * The one place that knows which parts of a connection string are credentials. What the
 * CLI and the stores' CLI entries show of a connection string they show through `masked`; what it quotes of others'
 * text (a driver's error, commander's) goes through `unquoted`, which takes out every
 * credential the command line holds. Cron and CI keep these lines.
 */

const MASK = '***'

/**
 * Query parameters and libpq keywords that hold a credential or name the file of one:
 * pg's `password`, `sslpassword`, `sslkey` and `passfile`; ioredis' `password` and
 * `sentinelPassword`; mysql2's `password`, `password1`…; a token or secret of any driver.
 */
const CREDENTIAL = /pass|secret|token|sslkey|credential/i

const SCHEME = /^([a-z][a-z0-9+.-]*):\/\//i

// redis-cli reads the userinfo of redis://s3cret@host as the password, not the user.
const BARE_USERINFO_IS_PASSWORD = new Set(['redis', 'rediss', 'valkey', 'valkeys'])

/** Where in a connection string a credential is written, and how it reads when decoded. */
interface Credential {
  start: number
  end: number
  decoded: string
}

/**
 * The connection string with every credential replaced by `***`, and nothing else
 * changed: the password of a URL's userinfo (all of a Redis URL's userinfo without a
 * `:`), credential query parameters, and the values of libpq's credential keywords.
 * A URL that does not parse is masked from its first `:` after `//` to its last `@`.
 * @example masked('postgres://app:s3cret@db/app?sslpassword=x') // 'postgres://app:***@db/app?sslpassword=***'
 */
export function masked(text: string): string {
  let shown = ''
  let at = 0
  for (const { start, end } of credentials(text)) {
    shown += `${text.slice(at, start)}${MASK}`
    at = end
  }
  return shown + text.slice(at)
}

/**
 * `text` (what a driver, a parser or commander wrote) with every credential of
 * `sources` (connection strings, or whole command lines) replaced by `***`, as written
 * and as decoded.
 * @example unquoted("open '/keys/app.key'", ['postgres://db/app?sslkey=/keys/app.key']) // "open '***'"
 */
export function unquoted(text: string, sources: readonly string[]): string {
  const secrets = new Set<string>()
  for (const source of sources) {
    // `--postgres=<url>`: the value after the flag's `=`.
    const value = source.replace(/^--?[\w-]+=/, '')
    for (const { start, end, decoded } of credentials(value)) {
      secrets.add(value.slice(start, end))
      secrets.add(decoded)
    }
  }
  secrets.delete('')
  // Longest first, so a secret that holds another is replaced whole.
  return [...secrets].sort((a, b) => b.length - a.length).reduce((shown, secret) => shown.replaceAll(secret, MASK), text)
}

/**
 * What an error of someone else's says (a driver's, a parser's), with every credential
 * of `sources` taken out.
 * @example reason(error, [target.given]) // 'getaddrinfo ENOTFOUND db.internal'
 */
export function reason(error: unknown, sources: readonly string[]): string {
  return unquoted(error instanceof Error ? error.message : String(error), sources)
}

function credentials(text: string): Credential[] {
  const scheme = SCHEME.exec(text)
  if (scheme === null) {
    return libpqSettings(text)
      .pairs.filter((pair) => CREDENTIAL.test(pair.keyword))
      .map(({ start, end, value }) => ({ start, end, decoded: value }))
  }
  const authority = scheme[0].length
  // A URL that parses ends its userinfo where its authority ends; one that does not may
  // hold a password with a `/` or `?` in it, so its last `@` is taken.
  const authorityEnd = URL.canParse(text) ? firstOf(text, '/?#', authority) : text.length
  const at = text.lastIndexOf('@', authorityEnd - 1)
  const found: Credential[] = []
  if (at >= authority) {
    const colon = text.indexOf(':', authority)
    if (colon !== -1 && colon < at) found.push(credential(text, colon + 1, at, false))
    else if (BARE_USERINFO_IS_PASSWORD.has(scheme[1]!.toLowerCase())) found.push(credential(text, authority, at, false))
  }
  const query = text.indexOf('?', Math.max(at + 1, authority))
  if (query !== -1) found.push(...queryCredentials(text, query + 1, firstOf(text, '#', query)))
  return found
}

function queryCredentials(text: string, from: number, to: number): Credential[] {
  const found: Credential[] = []
  let start = from
  while (start < to) {
    const end = firstOf(text, '&', start, to)
    const equals = text.indexOf('=', start)
    if (equals !== -1 && equals < end && CREDENTIAL.test(decoded(text.slice(start, equals), true))) found.push(credential(text, equals + 1, end, true))
    start = end + 1
  }
  return found
}

// In a query `+` is a space (URLSearchParams, which pg and ioredis read it with); in userinfo it is itself.
function credential(text: string, start: number, end: number, query: boolean): Credential {
  return { start, end, decoded: decoded(text.slice(start, end), query) }
}

function decoded(text: string, query: boolean): string {
  try {
    return decodeURIComponent(query ? text.replaceAll('+', ' ') : text)
  } catch {
    return text
  }
}

/** The index of the first of `chars` in `text[from, to)`, or `to`. */
function firstOf(text: string, chars: string, from: number, to = text.length): number {
  for (let i = from; i < to; i++) if (chars.includes(text[i]!)) return i
  return to
}
