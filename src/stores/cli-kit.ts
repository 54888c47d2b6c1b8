import { CliError } from '../core/errors/cli-error.js'
import { masked, reason } from '../core/errors/credentials.js'

/**
 * What the stores' CLI entries (`<store>/entry.ts`, ports/store-entry.ts) share: loading
 * an optional driver, checking a connection URL, saying why a connection failed, and
 * writing a value a shell reads back. Every message shows a connection string `masked`.
 */

/**
 * Loads an optional peer dependency, or says which one to install.
 * @throws CliError `npm i <name>` when it is not installed
 */
export async function loadPeer<T>(name: string, what: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load()
  } catch (error) {
    const code = (error as { code?: string }).code
    if ((code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') && String((error as Error).message).includes(name)) {
      throw new CliError(`the ${what} driver "${name}" is not installed`, `npm i ${name}`, { cause: error })
    }
    throw error
  }
}

/** A kind of connection URL a flag takes. */
export interface UrlForm {
  /** The flag, without its dashes: `redis`. */
  flag: string
  /** The backend, for messages: `Redis`. */
  name: string
  protocols: readonly string[]
  example: string
  /** What else the flag takes, for the fix of a value that is no URL: `, or libpq's keyword=value pairs…`. */
  otherwise?: string
  /** Whether a URL without a host is one (Postgres: a `host` query parameter). */
  hostless?: (url: URL) => boolean
}

/**
 * A URL of the form's kind, with a host.
 * @throws CliError otherwise
 */
export function checkedUrl(form: UrlForm, text: string): string {
  const { flag, name, protocols, example } = form
  const shown = JSON.stringify(masked(text))
  let url: URL
  try {
    url = new URL(text)
  } catch {
    throw new CliError(`--${flag} ${shown} is not a URL`, `pass a ${name} URL, such as ${example}${form.otherwise ?? ''}`)
  }
  if (!protocols.includes(url.protocol)) {
    throw new CliError(`--${flag} ${shown} is a ${url.protocol.slice(0, -1)} URL`, `pass a URL starting with ${protocols.map((p) => `${p}//`).join(' or ')}, such as ${example}`)
  }
  if (url.hostname === '' && form.hostless?.(url) !== true) throw new CliError(`--${flag} ${shown} names no host`, `pass a URL with a host, such as ${example}`)
  return text
}

/** A failure to connect, as cause and fix: the connection string masked, the driver's message without its credentials. */
export function connectionError(what: string, given: string, error: unknown): CliError {
  const code = (error as { code?: string }).code
  const where = /^[a-z][a-z0-9+.-]*:\/\//i.test(given) ? 'the URL' : 'the connection string'
  // Postgres refuses a login with 28P01 or 28000, MySQL with ER_ACCESS_DENIED_ERROR, Redis with a WRONGPASS or NOAUTH reply.
  const refused = code === '28P01' || code === '28000' || code === 'ER_ACCESS_DENIED_ERROR' || (error instanceof Error && /^(WRONGPASS|NOAUTH)\b/.test(error.message))
  const fix = refused
    ? `check the user and password in ${where}`
    : code === '3D000' || code === 'ER_BAD_DB_ERROR'
      ? `check the database name in ${where}, or create it`
      : `check ${where} and that ${what} is running and accepts connections from here`
  const shown = /\s/.test(given) ? JSON.stringify(masked(given)) : masked(given)
  return new CliError(`cannot connect to ${what} at ${shown}: ${reason(error, [given])}`, fix, { cause: error })
}

/** `text` as one word for a shell: `&` in a query, spaces in keyword/value pairs, the mask's `*` would be read by it. */
export function shellWord(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`
}

/** The error of a SQL store whose tables are missing at `where`: `idem migrate` with the target's flags makes them. */
export function tablesMissingError(where: string, flags: string, cause: unknown): CliError {
  return new CliError(`idem's tables are missing in ${where}, or older than this idem`, `run: idem migrate ${flags}`, { cause })
}

/** A plain SQL identifier (`--schema`): letters, digits and _, not starting with a digit. */
export function sqlIdentifier(value: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(value)) throw new Error(`Expected a plain SQL identifier (letters, digits, _; at most 63), got ${JSON.stringify(value)}.`)
  return value
}

/** An http(s) URL (`--endpoint`). */
export function httpUrl(value: string): string {
  const protocol = URL.canParse(value) ? new URL(value).protocol : ''
  if (protocol !== 'http:' && protocol !== 'https:') throw new Error('Expected an http(s) URL, such as http://127.0.0.1:8000.')
  return value
}
