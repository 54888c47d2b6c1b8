import { masked } from './credentials.js'
import { CliError } from './io.js'
import { libpqSettings, type LibpqPair } from './libpq.js'

/**
 * The connection strings `--postgres`, `--mysql` and `--redis` take, checked before anything
 * connects: a URL that is not one fails here, not as a DNS error about a host it made
 * up. Every message shows the string `masked`.
 */

/** What `--postgres` names: a URL, which pg reads itself, or libpq's keyword/value pairs. */
export type PostgresConnection = { form: 'url'; url: string } | { form: 'keywords'; pairs: readonly LibpqPair[] }

type UrlFlag = 'postgres' | 'redis' | 'mysql'

const URL_FORMS: Record<UrlFlag, { name: string; protocols: readonly string[]; example: string }> = {
  postgres: { name: 'Postgres', protocols: ['postgres:', 'postgresql:'], example: 'postgres://user@127.0.0.1:5432/app' },
  redis: { name: 'Redis', protocols: ['redis:', 'rediss:'], example: 'redis://127.0.0.1:6379' },
  mysql: { name: 'MySQL', protocols: ['mysql:'], example: 'mysql://user@127.0.0.1:3306/app' },
}

const KEYWORDS_EXAMPLE = "'host=127.0.0.1 port=5432 user=app dbname=app'"

/**
 * `--postgres`: a `postgres://` URL, or (what libpq, psql and pg_dump also take)
 * keyword/value pairs such as `host=db port=5432 user=app dbname=app`.
 * @throws CliError when it is neither, or names no host
 */
export function postgresConnection(text: string): PostgresConnection {
  // A string with a scheme is a URL (a mysql:// one is refused by name); libpq reads every
  // other one as keyword/value pairs, and one without any `=` can only be a mistyped URL.
  if (/^[a-z][a-z0-9+.-]*:/i.test(text) || !text.includes('=')) return { form: 'url', url: checkedUrl('postgres', text) }
  const { pairs, error } = libpqSettings(text)
  const fix = `pass keyword=value pairs separated by spaces, quoting a value with spaces in '…', such as ${KEYWORDS_EXAMPLE}, or a URL, such as ${URL_FORMS.postgres.example}`
  if (error !== undefined) throw new CliError(`--postgres is not a connection string: ${error}`, fix)
  if (pairs.some((pair) => pair.keyword === '')) throw new CliError('--postgres is not a connection string: a setting has no keyword before its "="', fix)
  if (!pairs.some((pair) => pair.keyword === 'host' && pair.value !== '')) {
    throw new CliError(`--postgres ${JSON.stringify(masked(text))} names no host`, `add host=<name or address>, such as ${KEYWORDS_EXAMPLE}`)
  }
  return { form: 'keywords', pairs }
}

/**
 * A URL of the flag's kind, with a host (or, for Postgres, a `host` query parameter).
 * @throws CliError otherwise
 */
export function checkedUrl(flag: UrlFlag, text: string): string {
  const { name, protocols, example } = URL_FORMS[flag]
  const shown = JSON.stringify(masked(text))
  let url: URL
  try {
    url = new URL(text)
  } catch {
    const keywords = flag === 'postgres' ? `, or libpq's keyword=value pairs, such as ${KEYWORDS_EXAMPLE}` : ''
    throw new CliError(`--${flag} ${shown} is not a URL`, `pass a ${name} URL, such as ${example}${keywords}`)
  }
  if (!protocols.includes(url.protocol)) {
    throw new CliError(`--${flag} ${shown} is a ${url.protocol.slice(0, -1)} URL`, `pass a URL starting with ${protocols.map((p) => `${p}//`).join(' or ')}, such as ${example}`)
  }
  if (url.hostname === '' && !(flag === 'postgres' && url.searchParams.has('host'))) {
    throw new CliError(`--${flag} ${shown} names no host`, `pass a URL with a host, such as ${example}`)
  }
  return text
}
