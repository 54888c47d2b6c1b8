import { CliError } from '../../core/errors/cli-error.js'
import { masked } from '../../core/errors/credentials.js'
import { libpqSettings, type LibpqPair } from '../../core/errors/libpq.js'
import { checkedUrl, type UrlForm } from '../cli-kit.js'

/** What `--postgres` names: a URL, which pg reads itself, or libpq's keyword/value pairs. */
export type PostgresConnection = { form: 'url'; url: string } | { form: 'keywords'; pairs: readonly LibpqPair[] }

const KEYWORDS_EXAMPLE = "'host=127.0.0.1 port=5432 user=app dbname=app'"

const POSTGRES_URL: UrlForm = {
  flag: 'postgres',
  name: 'Postgres',
  protocols: ['postgres:', 'postgresql:'],
  example: 'postgres://user@127.0.0.1:5432/app',
  otherwise: `, or libpq's keyword=value pairs, such as ${KEYWORDS_EXAMPLE}`,
  hostless: (url) => url.searchParams.has('host'),
}

/**
 * `--postgres`: a `postgres://` URL, or (what libpq, psql and pg_dump also take)
 * keyword/value pairs such as `host=db port=5432 user=app dbname=app`.
 * @throws CliError when it is neither, or names no host
 */
export function postgresConnection(text: string): PostgresConnection {
  // A string with a scheme is a URL (a mysql:// one is refused by name); libpq reads every
  // other one as keyword/value pairs, and one without any `=` can only be a mistyped URL.
  if (/^[a-z][a-z0-9+.-]*:/i.test(text) || !text.includes('=')) return { form: 'url', url: checkedUrl(POSTGRES_URL, text) }
  const { pairs, error } = libpqSettings(text)
  const fix = `pass keyword=value pairs separated by spaces, quoting a value with spaces in '…', such as ${KEYWORDS_EXAMPLE}, or a URL, such as ${POSTGRES_URL.example}`
  if (error !== undefined) throw new CliError(`--postgres is not a connection string: ${error}`, fix)
  if (pairs.some((pair) => pair.keyword === '')) throw new CliError('--postgres is not a connection string: a setting has no keyword before its "="', fix)
  if (!pairs.some((pair) => pair.keyword === 'host' && pair.value !== '')) {
    throw new CliError(`--postgres ${JSON.stringify(masked(text))} names no host`, `add host=<name or address>, such as ${KEYWORDS_EXAMPLE}`)
  }
  return { form: 'keywords', pairs }
}

/** pg's parser of connection strings, `pg-connection-string`: a dependency of pg's, reached through pg so that it is the copy pg reads with. */
export type PgParse = (connectionString: string) => Record<string, unknown>

/**
 * What pg is given for the connection: a URL as it is; keyword/value pairs as the same
 * query parameters of a URL, read by pg's own parser (so each keyword means what it
 * means to pg: `sslmode`, `sslkey`, `application_name`…), with `dbname` the database.
 */
export function pgConnection(connection: PostgresConnection, parse: PgParse): Record<string, unknown> {
  if (connection.form === 'url') return { connectionString: connection.url }
  const query = new URLSearchParams()
  let database: string | undefined
  for (const { keyword, value } of connection.pairs) {
    if (keyword === 'dbname') database = value
    else query.set(keyword, value)
  }
  return { ...parse(`postgres://?${query}`), database }
}
