// The floor for the transactional mode: what a careful engineer writes by hand to make
// a route idempotent on Postgres, with no library. The route's effects and the key's
// row commit in one transaction; the key is claimed under a transaction-scoped advisory
// lock (a duplicate waits for the holder and then reads its row); the response is stored
// in that transaction; the two statements of its own are prepared once per connection
// and share round trips with BEGIN and COMMIT. A fresh request costs three round trips
// (BEGIN + lock + read, the route's own statements, store + COMMIT), the same as idem's;
// a retry of a stored key two (BEGIN + lock + read, COMMIT).
// Used by bench:http (Hono, Express) and bench:peers (Express 4 and 5); its correctness
// (a replay returns the stored response, a concurrent duplicate does not run twice) is
// tested against a real Postgres in test/bench/hand-written.test.ts.
import { createHash } from 'node:crypto'

const preparedOn = new Map()

/** The key table, in `schema` (a plain identifier). */
export function handWrittenTable(schema) {
  return (
    `CREATE TABLE IF NOT EXISTS "${schema}".hand_keys (` +
    'scope text NOT NULL, key text NOT NULL, fingerprint text NOT NULL, status integer NOT NULL, body text NOT NULL, ' +
    'created_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (scope, key))'
  )
}

/** SHA-256 of the method, path and body bytes: what makes "the same request". */
export function fingerprintOf(method, path, body) {
  return createHash('sha256').update(`${method} ${path}\n`).update(body ?? '').digest('hex')
}

/**
 * The hand-written key handling over `pool`, on the table `handWrittenTable(schema)`
 * made. `handle(request, route)` runs `route(client)` (the route's statements, on the
 * transaction's client; it resolves with `{ status, body }`, the body a string) at most
 * once per `(scope, key)` and stores its answer with its effects; a 5xx answer is not
 * stored (the transaction rolls back). A retry gets `{ status, body, replayed: true }`;
 * the same key with another fingerprint `{ status: 422 }`.
 */
export function handWrittenKeys({ pool, schema }) {
  const table = `"${schema}".hand_keys`
  // Names unique per schema, so two benches on one database never share a statement.
  const read = `hand_read_${schema}`
  const save = `hand_save_${schema}`
  const prepare =
    `PREPARE ${read}(text, text) AS SELECT fingerprint, status, body FROM ${table} WHERE scope = $1 AND key = $2; ` +
    `PREPARE ${save}(text, text, text, integer, text) AS INSERT INTO ${table} (scope, key, fingerprint, status, body) VALUES ($1, $2, $3, $4, $5); `
  // The connections (pg clients) that have the statements, shared by every instance on the schema.
  const prepared = preparedOn.get(schema) ?? preparedOn.set(schema, new WeakSet()).get(schema)

  return {
    async handle({ scope, key, fingerprint }, route) {
      const client = await pool.connect()
      const lit = (value) => client.escapeLiteral(value)
      let broken
      try {
        // One round trip: the statements if this connection lacks them, BEGIN, the key's
        // lock (waiting for a holder; a collision of two keys' hashes only serialises
        // them), and the key's row, read after the lock in a snapshot of its own.
        const first = prepared.has(client) ? '' : prepare
        const results = await client.query(
          `${first}BEGIN; SELECT pg_advisory_xact_lock(hashtextextended(${lit(`${scope.length}:${scope}${key}`)}, 0)); ` +
            `EXECUTE ${read}(${lit(scope)}, ${lit(key)})`,
        )
        prepared.add(client)
        const row = results[results.length - 1].rows[0]
        if (row !== undefined) {
          await client.query('COMMIT')
          if (row.fingerprint !== fingerprint) return { status: 422, body: JSON.stringify({ error: 'this key was used with another request' }) }
          return { status: row.status, body: row.body, replayed: true }
        }
        const answer = await route(client)
        if (answer.status >= 500) {
          await client.query('ROLLBACK')
          return answer
        }
        await client.query(`EXECUTE ${save}(${lit(scope)}, ${lit(key)}, ${lit(fingerprint)}, ${answer.status}, ${lit(answer.body)}); COMMIT`)
        return answer
      } catch (error) {
        // Whatever failed, the transaction (if one is open) rolls back: nothing of the
        // route's is kept without its key row. A connection that cannot roll back is
        // not given back to the pool.
        await client.query('ROLLBACK').catch((rollbackError) => (broken = rollbackError))
        throw error
      } finally {
        client.release(broken)
      }
    },
  }
}
