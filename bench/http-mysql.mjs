// bench:http's MySQL line: the Hono app of bench:http (on @hono/node-server, one INSERT
// per request) over MySQL / MariaDB, in a child process of its own, measured with
// autocannon in interleaved rounds:
//   unprotected_tx  the route without idem, its INSERT in a transaction of its own
//   hand_written    the route behind the careful hand-written MySQL scheme
//                   (bench/hand-written-mysql.mjs: the key's row inserted first in the
//                   route's transaction, the answer stored in it, three round trips on a
//                   multipleStatements pool): the floor with idem's guarantees
//   fresh           the route behind idem's Hono middleware on mysqlStore, a new key each
//   replay          retries of keys the fresh runs stored
// One pool (multipleStatements on, as the hand-written scheme needs; idem sends one
// statement at a time) of the same size as Postgres's.
import { keyedVariants, measureVariants, serveParent, startServer } from './autocannon.mjs'
import { fingerprintOf, handWrittenMysqlKeys, handWrittenMysqlTable } from './hand-written-mysql.mjs'

const MYSQL_URL = process.env.IDEM_BENCH_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test'

function urlOf(database) {
  const url = new URL(MYSQL_URL)
  url.pathname = `/${database}`
  return url.toString()
}

/** The child (BENCH_APP=hono-mysql): the Hono app over a pool on the database the parent made. */
export async function serveHonoMysql(poolSize) {
  const [{ default: mysql }, { mysqlStore }, { Hono }, { idempotency }, { serve }] = await Promise.all([
    import('mysql2/promise'),
    import('../dist/stores/mysql/index.js'),
    import('hono'),
    import('../dist/http/adapters/hono/index.js'),
    import('@hono/node-server'),
  ])
  const pool = mysql.createPool({ uri: urlOf(process.env.BENCH_MYSQL_DATABASE), connectionLimit: poolSize, charset: 'utf8mb4', multipleStatements: true })
  const insert = async (executor, body) => (await executor.query('INSERT INTO orders (body) VALUES (?)', [body]))[0].insertId
  const hand = handWrittenMysqlKeys({ pool })
  const account = (header) => header ?? 'acct_bench'
  const hono = new Hono()
  hono.post('/plain-tx', async (c) => {
    const body = await c.req.text()
    const connection = await pool.getConnection()
    try {
      await connection.query('START TRANSACTION')
      const id = await insert(connection, body)
      await connection.query('COMMIT')
      return c.json({ id }, 201)
    } finally {
      connection.release()
    }
  })
  hono.post('/hand', async (c) => {
    const key = c.req.header('idempotency-key')
    if (key === undefined) return c.json({ error: 'Idempotency-Key is required' }, 400)
    const body = await c.req.text()
    const request = { scope: account(c.req.header('x-account')), key, fingerprint: fingerprintOf('POST', c.req.path, body) }
    const answer = await hand.handle(request, async (connection) => ({ status: 201, body: JSON.stringify({ id: await insert(connection, body) }) }))
    return c.body(answer.body, answer.status, { 'content-type': 'application/json' })
  })
  hono.use('/idem', idempotency({ store: mysqlStore({ pool }), scope: (c) => account(c.req.header('x-account')) }))
  hono.post('/idem', async (c) => c.json({ id: await insert(c.get('idem').tx, await c.req.text()) }, 201))
  const server = serve({ fetch: hono.fetch, hostname: '127.0.0.1', port: 0 })
  await new Promise((resolve) => server.once('listening', resolve))
  serveParent({ app: server.address().port })
}

/**
 * The parent: a database of its own, the child, the variants measured. Undefined (and
 * said) when the server is unreachable.
 * @returns `{ rates, cpu }`: requests per second and CPU per request (measureVariants' `cpuPerRequest`) of each variant
 */
export async function benchHonoMysql({ script, body, rounds, seconds, connections }) {
  const { default: mysql } = await import('mysql2/promise')
  const { mysqlStore } = await import('../dist/stores/mysql/index.js')
  const database = `idem_bench_http_${process.pid}`
  const admin = mysql.createPool({ uri: MYSQL_URL, connectionLimit: 1 })
  try {
    await admin.query(`DROP DATABASE IF EXISTS \`${database}\``)
    await admin.query(`CREATE DATABASE \`${database}\``)
  } catch (error) {
    console.log(`bench:http: MySQL at ${MYSQL_URL} is unreachable, its line is left out (${error.message})`)
    await admin.end()
    return undefined
  }
  try {
    const setup = mysql.createPool({ uri: urlOf(database), connectionLimit: 1 })
    await mysqlStore({ pool: setup }).migrate()
    await setup.query(handWrittenMysqlTable())
    await setup.query('CREATE TABLE orders (id BIGINT AUTO_INCREMENT PRIMARY KEY, body JSON NOT NULL, created_at TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3)) ENGINE=InnoDB')
    await setup.end()
    const server = await startServer(script, { BENCH_APP: 'hono-mysql', BENCH_MYSQL_DATABASE: database })
    try {
      const headers = { 'content-type': 'application/json' }
      const keyed = keyedVariants('/idem', headers, connections)
      const hand = keyedVariants('/hand', headers, connections)
      const cpu = {}
      const rates = await measureVariants({
        label: 'hono+mysql',
        url: `http://127.0.0.1:${server.ports.app}`,
        variants: { unprotected_tx: { path: '/plain-tx', headers }, hand_written: hand.fresh, fresh: keyed.fresh, replay: keyed.replay },
        body,
        rounds,
        seconds,
        connections,
        serverCpu: server.serverCpu,
        serverPid: server.pid,
        cpuPerRequest: cpu,
        afterWarmUp: () => {
          if (keyed.issued() < 8 * connections) throw new Error(`hono+mysql: only ${keyed.issued()} keys stored in the warm-up; too few to replay`)
        },
      })
      return { rates, cpu }
    } finally {
      await server.stop()
    }
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS \`${database}\``)
    await admin.end()
  }
}
