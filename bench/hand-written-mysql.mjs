// The floor for the transactional mode on MySQL / MariaDB: what a careful engineer writes
// by hand to make a route idempotent there, with no library, with the same guarantees
// as idem's MySQL store. The key is claimed first, inside the route's transaction, by
// INSERTing its row (fingerprint, no answer yet): InnoDB's duplicate check makes a
// concurrent duplicate wait on that row's lock until the holder commits or rolls back.
// Then the route's statements, then the answer stored in the same row and COMMIT. A
// duplicate that finds the row committed (ER_DUP_ENTRY) rolls back and reads it: the
// stored answer, or 422 for another fingerprint. A rolled-back holder leaves no row,
// and the waiting duplicate's INSERT then claims the key itself.
//
// Round trips, on a pool made with `multipleStatements: true` (the fewest a careful
// engineer gets; values escaped by mysql2, text protocol): a fresh key three
// (START TRANSACTION + INSERT, the route's own statements, UPDATE + COMMIT), a retry of
// a stored key two (START TRANSACTION + INSERT failing on the duplicate, ROLLBACK +
// SELECT). A deadlock on the claim (two duplicates woken together when a holder rolls
// back) is retried, as InnoDB asks.
// Used by bench:mysql, bench:http's MySQL line; its correctness (a replay returns the
// stored answer, concurrent duplicates run once, another fingerprint is refused) is
// tested against a real MariaDB in test/bench/hand-written-mysql.test.ts.

export { fingerprintOf } from './hand-written.mjs'

const DUPLICATE = 1062
const DEADLOCK = 1213
const CLAIM_ATTEMPTS = 10

/** The key table, in the pool's database. */
export function handWrittenMysqlTable() {
  return (
    'CREATE TABLE IF NOT EXISTS hand_keys (scope VARBINARY(255) NOT NULL, `key` VARBINARY(255) NOT NULL, ' +
    'fingerprint CHAR(64) NOT NULL, status INT NOT NULL, body LONGTEXT NOT NULL, ' +
    'created_at TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3), PRIMARY KEY (scope, `key`)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4'
  )
}

const CLAIM = "START TRANSACTION; INSERT INTO hand_keys (scope, `key`, fingerprint, status, body) VALUES (?, ?, ?, 0, '')"
const READ = 'ROLLBACK; SELECT fingerprint, status, body FROM hand_keys WHERE scope = ? AND `key` = ?'
const SAVE = 'UPDATE hand_keys SET status = ?, body = ? WHERE scope = ? AND `key` = ?; COMMIT'

/**
 * The hand-written key handling over `pool` (a mysql2/promise pool made with
 * `multipleStatements: true`), on the table `handWrittenMysqlTable()` made.
 * `handle(request, route)` runs `route(connection)` (the route's statements, on the
 * transaction's connection; it resolves with `{ status, body }`, the body a string) at
 * most once per `(scope, key)` and stores its answer with its effects; a 5xx answer is
 * not stored (the transaction rolls back). A retry gets `{ status, body, replayed: true }`;
 * the same key with another fingerprint `{ status: 422 }`.
 */
export function handWrittenMysqlKeys({ pool }) {
  if (pool.pool?.config?.connectionConfig?.multipleStatements !== true) {
    throw new Error('handWrittenMysqlKeys: make the pool with multipleStatements: true (its round trips pair statements)')
  }
  return {
    async handle({ scope, key, fingerprint }, route) {
      const connection = await pool.getConnection()
      let broken = false
      try {
        const stored = await claim(connection, scope, key, fingerprint)
        if (stored !== undefined) {
          if (stored.fingerprint !== fingerprint) return { status: 422, body: JSON.stringify({ error: 'this key was used with another request' }) }
          return { status: stored.status, body: stored.body, replayed: true }
        }
        const answer = await route(connection)
        if (answer.status >= 500) {
          await connection.query('ROLLBACK')
          return answer
        }
        await connection.query(SAVE, [answer.status, answer.body, scope, key])
        return answer
      } catch (error) {
        // Whatever failed, the transaction (if one is open) rolls back: nothing of the
        // route's is kept without its key row. A connection that cannot roll back is
        // not given back to the pool.
        await connection.query('ROLLBACK').catch(() => (broken = true))
        throw error
      } finally {
        if (broken) connection.destroy()
        else connection.release()
      }
    },
  }
}

/**
 * Opens the transaction and claims the key: undefined when this call holds it (its row
 * inserted, uncommitted), else the committed row (`fingerprint`, `status`, `body`), read
 * after the transaction is rolled back.
 */
async function claim(connection, scope, key, fingerprint) {
  for (let attempt = 1; ; attempt++) {
    try {
      await connection.query(CLAIM, [scope, key, fingerprint])
      return undefined
    } catch (error) {
      if (error.errno === DEADLOCK && attempt < CLAIM_ATTEMPTS) continue
      if (error.errno !== DUPLICATE) throw error
    }
    const [results] = await connection.query(READ, [scope, key])
    const row = results[1][0]
    // The holder's row is committed (a duplicate is only reported then); it may be gone
    // only if something deleted it meanwhile: claim again.
    if (row !== undefined) return { fingerprint: row.fingerprint, status: row.status, body: row.body }
  }
}
