// bench:mysql: what the engine costs on MySQL/MariaDB on top of the transaction it
// protects, 16 concurrent callers through one mysql2 pool, in interleaved rounds:
// (a) a bare transaction with one INSERT, (b) the same plus a minimal key row inserted
// after the effect (no claim before it: not a fair comparator, a concurrent duplicate
// runs the effect too and only fails at commit; the least any same-transaction scheme
// writes), (c) the same INSERT behind the hand-written careful scheme of
// bench/hand-written-mysql.mjs (the key claimed first by its row's INSERT, the answer
// stored in the same transaction, statements paired into three round trips): the floor
// with idem's guarantees, (d) the engine doing the same INSERT, (e) replays of stored
// keys through the engine and (f) through the hand-written scheme. Besides throughput,
// the CPU each variant costs per call: this process's and the MariaDB/MySQL server's
// (read from /proc: the server on this machine, all of it, so other users of the
// server count too), and the round trips (mysql2 commands) each fresh and replayed key
// costs, counted on the pool's connections. Build first (`npm run build`): this runs
// over dist/.
import { randomUUID } from 'node:crypto'
import mysql from 'mysql2/promise'
import { createIdem } from '../dist/index.js'
import { mysqlStore } from '../dist/stores/mysql/index.js'
import { fingerprintOf, handWrittenMysqlKeys, handWrittenMysqlTable } from './hand-written-mysql.mjs'
import { commandCounter } from './mysql-commands.mjs'
import { cpuLedger, interleaved, ratio, throughput } from './support.mjs'

const URL_ = process.env.IDEM_BENCH_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test'
const SECONDS = Number(process.env.BENCH_SECONDS ?? 2)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5)
const CONCURRENCY = 16

const database = `idem_bench_${process.pid}`
const admin = mysql.createPool({ uri: URL_, connectionLimit: 1 })
await admin.query(`DROP DATABASE IF EXISTS \`${database}\``)
await admin.query(`CREATE DATABASE \`${database}\``)
const url = new URL(URL_)
url.pathname = `/${database}`
// One pool for every variant; multiple statements on, as the hand-written scheme pairs its statements (idem sends one at a time).
const pool = mysql.createPool({ uri: url.toString(), connectionLimit: CONCURRENCY, charset: 'utf8mb4', multipleStatements: true })
const commands = commandCounter(pool)
const store = mysqlStore({ pool })
await store.migrate()
await pool.query('CREATE TABLE orders (id BIGINT AUTO_INCREMENT PRIMARY KEY, customer VARCHAR(50) NOT NULL, amount INT NOT NULL) ENGINE=InnoDB')
await pool.query('CREATE TABLE minimal_keys (scope VARBINARY(1024) NOT NULL, `key` VARBINARY(1024) NOT NULL, outcome LONGTEXT NOT NULL, PRIMARY KEY (scope, `key`)) ENGINE=InnoDB')
await pool.query(handWrittenMysqlTable())
const idem = createIdem({ store })
const hand = handWrittenMysqlKeys({ pool })
const run = randomUUID().slice(0, 8)
const insertOrder = async (tx) => (await tx.query('INSERT INTO orders (customer, amount) VALUES (?, ?)', ['c', 100]))[0].insertId
const input = { customer: 'c', amount: 100 }
const handRequest = (key) => ({ scope: 'acct', key, fingerprint: fingerprintOf('POST', '/orders', JSON.stringify(input)) })
const handRoute = async (connection) => ({ status: 201, body: JSON.stringify({ id: await insertOrder(connection) }) })

/** `work` in a transaction of its own on a pooled connection. */
async function inTransaction(work) {
  const connection = await pool.getConnection()
  try {
    await connection.query('START TRANSACTION')
    await work(connection)
    await connection.query('COMMIT')
  } finally {
    connection.release()
  }
}

const variants = {
  bare: () => inTransaction(insertOrder),
  minimal: (i, round) =>
    inTransaction(async (connection) => {
      const id = await insertOrder(connection)
      await connection.query('INSERT INTO minimal_keys (scope, `key`, outcome) VALUES (?, ?, ?)', ['acct', `${run}-${round}-${i}`, JSON.stringify({ id })])
    }),
  hand_written: async (i, round) => {
    const answer = await hand.handle(handRequest(`${run}-${round}-${i}`), handRoute)
    if (answer.replayed) throw new Error('a fresh key replayed')
  },
  engine: (i, round) => idem.run({ scope: 'acct', key: `${run}-${round}-${i}`, input }, async (tx) => ({ id: await insertOrder(tx) })),
}
// Replays hit 1,000 keys stored beforehand, by each.
for (let i = 0; i < 1000; i++) {
  await variants.engine(i, 'replay')
  await hand.handle(handRequest(`${run}-replay-${i}`), handRoute)
}
variants.replay = async (i) => {
  const { replayed } = await idem.run({ scope: 'acct', key: `${run}-replay-${i % 1000}`, input }, () => {
    throw new Error('a replay ran the function')
  })
  if (!replayed) throw new Error('expected a replay')
}
variants.hand_replay = async (i) => {
  const answer = await hand.handle(handRequest(`${run}-replay-${i % 1000}`), () => {
    throw new Error('a replay ran the route')
  })
  if (!answer.replayed) throw new Error('expected a replay')
}

console.log(`bench:mysql — ${(await pool.query('SELECT VERSION() AS v'))[0][0].v}, ${CONCURRENCY} concurrent callers, ${ROUNDS} interleaved rounds of ${SECONDS}s`)

// Round trips per call, counted one call at a time: every command mysql2 sends on the pool's connections.
const trips = {}
for (const [name, variant] of Object.entries(variants)) {
  const counted = await commands.during(async () => {
    for (let i = 0; i < 100; i++) await variant(i, `trips-${name}`)
  })
  trips[name] = counted.total / 100
  console.log(`  mysql ${name.padEnd(12)} ${trips[name].toFixed(2)} round trips per call (${counted.describe(100)})`)
}

// The server's process is labelled `mysql` by the ledger (support.mjs), whoever else uses it.
const SERVER = 'mysql'
const machine = cpuLedger({ [process.pid]: 'bench' })
let round = 0
const tps = await interleaved(variants, ROUNDS, (variant, name) => {
  const r = round++
  return machine.record(name, () => throughput((i) => variant(i, r), { concurrency: CONCURRENCY, ms: SECONDS * 1000 }))
})
machine.print('call')
const cpu = (name, label) => machine.micros(name, label)
// None read when the server runs on another machine (or /proc is not there).
const serverRead = (cpu('engine', SERVER) ?? 0) > 0
for (const [name, value] of Object.entries(tps)) {
  const server = serverRead ? cpu(name, SERVER) : undefined
  const bench = cpu(name, 'bench')
  const cpus = server === undefined ? '' : `   server ${server.toFixed(0).padStart(4)} µs/call   node ${bench.toFixed(0).padStart(4)} µs/call`
  console.log(`  mysql ${name.padEnd(12)} ${value.toFixed(0).padStart(7)} tx/s${cpus}`)
}
await pool.end()
await admin.query(`DROP DATABASE \`${database}\``)
await admin.end()

ratio('core.mysql.fresh_vs_hand_written', tps.engine / tps.hand_written)
ratio('core.mysql.replay_vs_hand_written', tps.replay / tps.hand_replay)
if (serverRead) {
  // CPU per call, the hand-written scheme's over the engine's: above 1 the engine costs less.
  ratio('core.mysql.fresh_vs_hand_written.server_cpu', cpu('hand_written', SERVER) / cpu('engine', SERVER))
  ratio('core.mysql.fresh_vs_hand_written.node_cpu', cpu('hand_written', 'bench') / cpu('engine', 'bench'))
  ratio('core.mysql.replay_vs_hand_written.server_cpu', cpu('hand_replay', SERVER) / cpu('replay', SERVER))
}
ratio('core.mysql.fresh_vs_hand_written.round_trips', trips.hand_written / trips.engine)
ratio('core.mysql.fresh_vs_minimal_sql', tps.engine / tps.minimal)
ratio('core.mysql.fresh_vs_bare', tps.engine / tps.bare)
ratio('core.mysql.replay_vs_bare', tps.replay / tps.bare)

