import type { Statement, Step } from '../../sql/statement.js'
import { inline, quoteLiteral } from '../dialect/statement.js'
import type { PgPoolClient, PgQueryResult } from './types.js'

/**
 * How the transactional stores talk to Postgres on a connection of their own: several
 * statements in one write and one round trip, over the extended protocol (Parse, Bind,
 * Describe, Execute per statement, one Sync), each statement prepared once per
 * connection under its name and then only bound to its values. Values travel as
 * parameters, never inlined into the text, so a 1 MiB outcome costs what its bytes cost.
 * A client that is not node-postgres' own (nothing to write the messages with) gets the
 * same statements in one simple-protocol text instead, values inlined.
 */
export interface Wire {
  /**
   * Sends `steps` in one round trip and resolves to one result per step. A step whose
   * prepared statement the connection turns out not to have (a pooler that moved the
   * session, `DISCARD ALL`) fails the round trip; unless it ran `inside` a transaction
   * (which that failure aborted), it is sent again, preparing everything afresh, after
   * rolling back the transaction the steps `open`.
   */
  send(client: WireClient, steps: readonly Step[], where: 'opens' | 'outside' | 'inside'): Promise<PgQueryResult[]>
}

/** What a wire needs of a held client (held-client.ts): its pg client, and its watch over the connection. */
export interface WireClient {
  readonly client: PgPoolClient
  readonly lost: Error | undefined
  query(text: string): Promise<PgQueryResult>
  through<T>(send: () => PromiseLike<T>): Promise<T>
}

/** The wire of the stores' statements; with `preparedStatements` off, each is parsed anew on every call. */
export function wireFor(preparedStatements: boolean): Wire {
  return {
    async send(client, steps, where) {
      const pg = client.client
      if (!pipelines(pg)) return simple(client, steps)
      const first = new Pipeline(steps, preparedStatements)
      try {
        return await client.through(() => pg.query(first))
      } catch (error) {
        if (!preparedStatements || where === 'inside' || !isMissingStatement(error) || client.lost !== undefined) throw error
        // The connection lost what was prepared on it: forget it, and prepare again.
        first.forget()
        if (where === 'opens') await client.query('ROLLBACK')
        const again = new Pipeline(steps, preparedStatements)
        return await client.through(() => pg.query(again))
      }
    },
  }
}

/** The steps as one simple-protocol text, values inlined: for a client without node-postgres' connection. */
async function simple(client: WireClient, steps: readonly Step[]): Promise<PgQueryResult[]> {
  const text = steps.map(({ statement, values }) => (values === undefined ? statement.text : inlined({ text: statement.text, values: [...values] }))).join('; ')
  return resultsOf(await client.query(text))
}

/**
 * The results of a simple-protocol text: pg resolves with one per statement when the
 * text holds several, and with the result itself when it holds one.
 */
export function resultsOf(result: PgQueryResult | PgQueryResult[]): PgQueryResult[] {
  return Array.isArray(result) ? result : [result]
}

/** A statement with its values inlined as literals, for the simple protocol (which carries several statements in one round trip). */
export function inlined(statement: Statement): string {
  return inline(statement, quoteLiteral)
}

// The statement a Bind named is missing (26000).
function isMissingStatement(error: unknown): boolean {
  return error !== null && typeof error === 'object' && 'code' in error && error.code === '26000'
}

/**
 * The part of node-postgres' connection a pipeline writes with (`client.connection`), as
 * pg-cursor and pg-query-stream use it: the extended protocol's messages, the socket
 * to cork them into one write, and the names of the statements prepared on it.
 */
interface PgConnection {
  parse(message: { name: string; text: string; types: never[] }): void
  bind(message: { statement: string; values: readonly unknown[]; valueMapper: (value: unknown) => string | null }): void
  describe(message: { type: 'P'; name: string }): void
  execute(message: { portal: string; rows: number }): void
  close(message: { type: 'S'; name: string }): void
  sync(): void
  readonly stream: { cork(): void; uncork(): void }
  /** node-postgres' own record of the statements prepared on the connection, by name. */
  readonly parsedStatements: Record<string, string>
}

/** A node-postgres client: it runs a submittable (`query(pipeline)`) on its connection. */
interface PipeliningClient {
  readonly connection: PgConnection
  query(pipeline: Pipeline): Pipeline
}

function pipelines(client: PgPoolClient): client is PgPoolClient & PipeliningClient {
  if (!('connection' in client)) return false
  const { connection } = client
  return connection !== null && typeof connection === 'object' && 'bind' in connection && typeof connection.bind === 'function' && 'parsedStatements' in connection
}

/** A field of a RowDescription, as node-postgres' parser gives it. */
interface Field {
  name: string
  dataTypeID: number
}

const BOOL = 16
const INT2 = 21
const INT4 = 23

/**
 * The round trip itself: a node-postgres "submittable" (the client hands it the
 * connection when the connection is free, and the backend's messages after that) that
 * is also the promise of its results. Rows come back as text and are read for the
 * types idem's statements return: text, booleans and small integers.
 */
export class Pipeline implements PromiseLike<PgQueryResult[]> {
  #connection: PgConnection | undefined
  /** What the round trip sends, in order. */
  readonly steps: readonly Step[]
  readonly #prepared: boolean
  readonly #results: PgQueryResult[] = []
  #fields: Field[] = []
  #rows: Record<string, unknown>[] = []
  #parsing: string[] = []
  readonly #promise: Promise<PgQueryResult[]>
  #resolve!: (results: PgQueryResult[]) => void
  #reject!: (error: unknown) => void

  constructor(steps: readonly Step[], prepared: boolean) {
    this.steps = steps
    this.#prepared = prepared
    this.#promise = new Promise<PgQueryResult[]>((resolve, reject) => {
      this.#resolve = resolve
      this.#reject = reject
    })
  }

  then<A = PgQueryResult[], B = never>(
    onFulfilled?: ((results: PgQueryResult[]) => A | PromiseLike<A>) | null,
    onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): Promise<A | B> {
    return this.#promise.then(onFulfilled, onRejected)
  }

  /** Called by the client when the connection is free: writes every message at once. */
  submit(connection: PgConnection): null {
    this.#connection = connection
    const parsed = connection.parsedStatements
    connection.stream.cork()
    try {
      for (const { statement, values = NO_VALUES } of this.steps) {
        const name = this.#prepared ? statement.name : ''
        if (name === '' || parsed[name] !== statement.text) {
          // Closing a statement the connection lacks is no error: this makes the Parse
          // right whatever the connection had under the name.
          if (name !== '') connection.close({ type: 'S', name })
          connection.parse({ name, text: statement.text, types: [] })
          if (name !== '') {
            parsed[name] = statement.text
            this.#parsing.push(name)
          }
        }
        connection.bind({ statement: name, values, valueMapper: toParameter })
        connection.describe({ type: 'P', name: '' })
        connection.execute({ portal: '', rows: 0 })
      }
      connection.sync()
    } finally {
      connection.stream.uncork()
    }
    return null
  }

  handleRowDescription(message: { fields: Field[] }): void {
    this.#fields = message.fields
  }

  handleDataRow(message: { fields: Array<string | null> }): void {
    const row: Record<string, unknown> = {}
    const fields = this.#fields
    for (let i = 0; i < fields.length; i++) {
      const text = message.fields[i] ?? null
      const { name, dataTypeID } = fields[i]!
      row[name] = text === null ? null : dataTypeID === BOOL ? text === 't' : dataTypeID === INT4 || dataTypeID === INT2 ? Number(text) : text
    }
    this.#rows.push(row)
  }

  handleCommandComplete(message: { text: string }): void {
    const { text } = message
    const space = text.lastIndexOf(' ')
    const count = space === -1 ? Number.NaN : Number(text.slice(space + 1))
    this.#results.push({ command: space === -1 ? text : text.slice(0, text.indexOf(' ')), rowCount: Number.isNaN(count) ? null : count, rows: this.#rows })
    this.#fields = []
    this.#rows = []
  }

  handleEmptyQuery(): void {
    this.#results.push({ command: '', rowCount: null, rows: [] })
  }

  handlePortalSuspended(): void {
    this.handleError(new Error('idem: a statement of a round trip returned its rows in parts'))
  }

  handleError(error: unknown): void {
    // What this round trip prepared may not have been: it is prepared again next time.
    const parsed = this.#connection?.parsedStatements
    if (parsed !== undefined) for (const name of this.#parsing) delete parsed[name]
    this.#reject(error)
  }

  /**
   * Forgets that the connection has any of idem's statements (named `idem_…`, see
   * `named` in src/stores/sql/statement.ts): whatever dropped one dropped the others too, and the next round trip
   * that uses one prepares it again.
   */
  forget(): void {
    const parsed = this.#connection?.parsedStatements
    if (parsed !== undefined) for (const name of Object.keys(parsed)) if (name.startsWith('idem_')) delete parsed[name]
  }

  handleReadyForQuery(): void {
    this.#resolve(this.#results)
  }

  handleCopyInResponse(): void {}

  handleCopyData(): void {}
}

const NO_VALUES: readonly unknown[] = []

// Values go as text: idem's statements take text, integers and bigints.
function toParameter(value: unknown): string | null {
  return value === null || value === undefined ? null : typeof value === 'string' ? value : String(value)
}
