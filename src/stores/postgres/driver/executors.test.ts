// The executors without a database: what reaches each ORM, how literals are quoted, and
// what is refused. test/postgres/orm-transactions.test.ts runs them against Postgres.
import fc from 'fast-check'
import pg from 'pg'
import { DrizzleQueryError, sql } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/node-postgres'
import { PgDialect } from 'drizzle-orm/pg-core'
import {
  Kysely,
  ParseJSONResultsPlugin,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  CompiledQuery,
  type DatabaseConnection,
  type Driver,
  type QueryResult,
} from 'kysely'
import { describe, expect, it } from 'vitest'
import { InvalidOptionError } from '../../../core/errors/invalid-option.js'
import { assertExecutor, drizzleQuery, escapeLiteral, fromDrizzle, fromKysely, fromPg } from './executors.js'

/** Kysely's real executor over a driver that records what it is sent and answers `result`. */
function recordingKysely(result: QueryResult<unknown>) {
  const sent: CompiledQuery[] = []
  const connection: DatabaseConnection = {
    async executeQuery<R>(query: CompiledQuery) {
      sent.push(query)
      return result as QueryResult<R>
    },
    async *streamQuery() {
      throw new Error('not used')
    },
  }
  const driver: Driver = {
    async init() {},
    acquireConnection: async () => connection,
    beginTransaction: async (c) => void (await c.executeQuery(CompiledQuery.raw('begin'))),
    commitTransaction: async (c) => void (await c.executeQuery(CompiledQuery.raw('commit'))),
    rollbackTransaction: async () => {},
    releaseConnection: async () => {},
    destroy: async () => {},
  }
  const db = new Kysely<unknown>({
    dialect: {
      createAdapter: () => new PostgresAdapter(),
      createDriver: () => driver,
      createIntrospector: (k) => new PostgresIntrospector(k),
      createQueryCompiler: () => new PostgresQueryCompiler(),
    },
    // Would parse the JSON text of a stored outcome, were it applied to idem's statements.
    plugins: [new ParseJSONResultsPlugin()],
  })
  return { db, sent }
}

const render = (query: unknown) => new PgDialect().sqlToQuery(query as ReturnType<typeof sql.raw>)

describe('fromKysely', () => {
  it("sends the $n text and its values as they are, as Kysely's own CompiledQuery.raw would", async () => {
    const { db, sent } = recordingKysely({ rows: [{ state: 'new' }] })
    const tx = fromKysely(db)
    expect(await tx.query('SELECT $1::text AS a, $2::int AS b, $1::text AS c', ['x', 2])).toEqual({ rows: [{ state: 'new' }], rowCount: null })
    expect(sent).toHaveLength(1)
    const query = sent[0]!
    expect(query.sql).toBe('SELECT $1::text AS a, $2::int AS b, $1::text AS c')
    expect(query.parameters).toEqual(['x', 2])
    expect(query.query).toEqual({ kind: 'RawNode', sqlFragments: ['SELECT $1::text AS a, $2::int AS b, $1::text AS c'], parameters: [] })
    expect(typeof query.queryId.queryId).toBe('string')
    await tx.query('SELECT 1')
    expect(sent[1]!.parameters).toEqual([])
    expect(sent[1]!.queryId).not.toBe(query.queryId)
  })

  it('maps numAffectedRows to rowCount', async () => {
    const { db } = recordingKysely({ rows: [], numAffectedRows: 1n })
    expect(await fromKysely(db).query('INSERT INTO t VALUES ($1)', [1])).toEqual({ rows: [], rowCount: 1 })
  })

  it("leaves the app's plugins out: rows come back as the driver gave them", async () => {
    const { db } = recordingKysely({ rows: [{ outcome: '{"a":1}' }] })
    expect((await fromKysely(db).query('SELECT $1', [1])).rows).toEqual([{ outcome: '{"a":1}' }])
    // The app's own queries keep them.
    expect((await db.executeQuery({ sql: 'SELECT 1', parameters: [], query: { kind: 'RawNode', sqlFragments: ['SELECT 1'], parameters: [] }, queryId: { queryId: 'q' } } as CompiledQuery)).rows).toEqual([
      { outcome: { a: 1 } },
    ])
  })

  it("runs on a transaction's connection", async () => {
    const { db, sent } = recordingKysely({ rows: [] })
    await db.transaction().execute(async (trx) => {
      await fromKysely(trx).query('SELECT $1', ['in'])
    })
    expect(sent.map((q) => q.sql)).toEqual(['begin', 'SELECT $1', 'commit'])
  })
})

describe('drizzleQuery and fromDrizzle', () => {
  it('binds each placeholder, repeated ones once per use, $10 apart from $1', () => {
    const values = Array.from({ length: 10 }, (_, i) => `v${i + 1}`)
    expect(render(drizzleQuery('SELECT $1, $10, $1 || $2, f($3, $4, $5, $6, $7, $8, $9)', values, sql))).toEqual({
      sql: 'SELECT $1, $2, $3 || $4, f($5, $6, $7, $8, $9, $10, $11)',
      params: ['v1', 'v10', 'v1', 'v2', 'v3', 'v4', 'v5', 'v6', 'v7', 'v8', 'v9'],
      typings: expect.anything(),
    })
  })

  it('keeps values as single parameters (an array stays one array) and text around them as it is', () => {
    expect(render(drizzleQuery("SELECT * FROM t WHERE id = ANY($1) AND note <> '$'", [['a', 'b']], sql))).toMatchObject({
      sql: "SELECT * FROM t WHERE id = ANY($1) AND note <> '$'",
      params: [['a', 'b']],
    })
    expect(render(drizzleQuery('COMMIT', [], sql))).toMatchObject({ sql: 'COMMIT', params: [] })
  })

  it('refuses a placeholder without a value, and values no placeholder reaches', () => {
    expect(() => drizzleQuery('SELECT $2', ['a'], sql)).toThrow(/\$2 has no value/)
    expect(() => drizzleQuery('SELECT $0', ['a'], sql)).toThrow(/\$0 has no value/)
    expect(() => drizzleQuery('SELECT $1', ['a', 'b'], sql)).toThrow(/2 values given, but the text uses \$1 to \$1 only/)
  })

  it("runs the query with tx.execute, maps the result, and rejects with the driver's own error", async () => {
    const executed: unknown[] = []
    const pgError = Object.assign(new Error('relation "idem_keys" does not exist'), { code: '42P01' })
    const tx = {
      async execute(query: unknown) {
        executed.push(query)
        if (executed.length === 2) throw new DrizzleQueryError('SELECT …', ['k'], pgError)
        return { rows: [{ n: 1 }], rowCount: 1, command: 'INSERT' }
      },
    }
    const executor = fromDrizzle(tx, sql)
    expect(await executor.query('INSERT INTO t VALUES ($1)', ['a'])).toEqual({ rows: [{ n: 1 }], rowCount: 1 })
    expect(render(executed[0])).toMatchObject({ sql: 'INSERT INTO t VALUES ($1)', params: ['a'] })
    await expect(executor.query('SELECT $1', ['k'])).rejects.toBe(pgError)
  })

  it('says which drivers it serves when execute resolves without rows', async () => {
    const executor = fromDrizzle({ execute: async () => [] as unknown as { rows: unknown[]; rowCount: number } }, sql)
    await expect(executor.query('SELECT 1')).rejects.toThrow(/only the node-postgres driver/)
  })
})

describe('escapeLiteral', () => {
  it("quotes as pg's escapeLiteral does: quotes doubled, a backslash makes an E'' literal with backslashes doubled", () => {
    expect(escapeLiteral('plain')).toBe("'plain'")
    expect(escapeLiteral("it's")).toBe("'it''s'")
    expect(escapeLiteral('')).toBe("''")
    expect(escapeLiteral('a\\b')).toBe(" E'a\\\\b'")
    expect(escapeLiteral("\\'")).toBe(" E'\\\\'''")
    expect(escapeLiteral('😀 é\n')).toBe("'😀 é\n'")
  })

  it("matches pg's own escapeLiteral on any string", () => {
    const awkward = fc.string({ unit: fc.constantFrom("'", '\\', 'a', 'E', ' ', '\n', '😀', '"', '$') })
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: 'binary' }), awkward), (value) => {
        expect(escapeLiteral(value)).toBe(pg.escapeLiteral(value))
      }),
    )
  })
})

describe('shapes', () => {
  // Real objects of each library; none of them connects until a query is run.
  const pool = new pg.Pool({ connectionString: 'postgres://nobody@127.0.0.1:1/none' })
  const client = new pg.Client({ connectionString: 'postgres://nobody@127.0.0.1:1/none' })
  const kysely = recordingKysely({ rows: [] }).db
  const drizzleDb = drizzle(pool)

  it('fromPg returns a pg client as it is, and refuses a pool or an ORM naming what to pass', () => {
    expect(fromPg(client)).toBe(client)
    expect(() => fromPg(pool as never)).toThrow(InvalidOptionError)
    expect(() => fromPg(pool as never)).toThrow(/fromPg: "client" must be a pg client in an open transaction .* got a pg pool \(it runs each query on whichever connection is free/)
    expect(() => fromPg(kysely as never)).toThrow(/got a Kysely instance or transaction/)
    expect(() => fromPg(drizzleDb as never)).toThrow(/got a Drizzle database or transaction/)
    expect(() => fromPg(undefined as never)).toThrow(/got undefined/)
  })

  it('fromKysely refuses anything without executeQuery, naming it', () => {
    expect(() => fromKysely(client as never)).toThrow(/fromKysely: "trx" must be a Kysely transaction .* got a pg client/)
    expect(() => fromKysely(drizzleDb as never)).toThrow(/got a Drizzle database or transaction/)
    expect(() => fromKysely('trx' as never)).toThrow(/got "trx"/)
  })

  it("fromDrizzle refuses anything without execute, and a tag that is not drizzle's sql", () => {
    expect(() => fromDrizzle(kysely as never, sql)).toThrow(/fromDrizzle: "tx" must be a Drizzle transaction .* got a Kysely instance or transaction/)
    expect(() => fromDrizzle(client as never, sql)).toThrow(/got a pg client/)
    expect(() => fromDrizzle(drizzleDb, undefined as never)).toThrow(/fromDrizzle: "sql" must be drizzle's sql tag \(import \{ sql \} from 'drizzle-orm'\), got undefined/)
    expect(() => fromDrizzle(drizzleDb, { raw: () => '' } as never)).toThrow(/"sql" must be drizzle's sql tag/)
  })

  it('the joined paths refuse an ORM transaction passed as it is, naming the wrapper', () => {
    expect(() => assertExecutor('run: option "tx"', kysely)).toThrow(/run: option "tx" must be .* got a Kysely instance or transaction: pass fromKysely\(trx\)/)
    expect(() => assertExecutor('outbox.add: "tx"', drizzleDb)).toThrow(/got a Drizzle database or transaction: pass fromDrizzle\(tx, sql\)/)
    expect(() => assertExecutor('once: "tx"', 42)).toThrow(/once: "tx" must be .* got 42$/)
    expect(() => assertExecutor('run: option "tx"', client)).not.toThrow()
  })
})
