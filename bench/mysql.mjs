// bench:mysql: what the engine costs on MySQL/MariaDB on top of the transaction it
// protects, 16 concurrent callers through one mysql2 pool, in interleaved rounds:
// (a) a bare transaction with one INSERT, (b) the same plus a hand-written minimal key
// row in the same transaction (the least any same-transaction scheme writes), (c) the
// engine doing the same INSERT, (d) replays of stored keys.
import { randomUUID } from 'node:crypto'
import mysql from 'mysql2/promise'
import { createIdem } from '../dist/index.js'
import { mysqlStore } from '../dist/stores/mysql/index.js'
import { interleaved, ratio, throughput } from './support.mjs'

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
const pool = mysql.createPool({ uri: url.toString(), connectionLimit: CONCURRENCY, charset: 'utf8mb4' })
const store = mysqlStore({ pool })
await store.migrate()
await pool.query('CREATE TABLE orders (id BIGINT AUTO_INCREMENT PRIMARY KEY, customer VARCHAR(50) NOT NULL, amount INT NOT NULL) ENGINE=InnoDB')
await pool.query('CREATE TABLE minimal_keys (scope VARBINARY(1024) NOT NULL, `key` VARBINARY(1024) NOT NULL, outcome LONGTEXT NOT NULL, PRIMARY KEY (scope, `key`)) ENGINE=InnoDB')
const idem = createIdem({ store })
const run = randomUUID().slice(0, 8)
const insertOrder = async (tx) => (await tx.query('INSERT INTO orders (customer, amount) VALUES (?, ?)', ['c', 100]))[0].insertId

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
  engine: (i, round) => idem.run({ scope: 'acct', key: `${run}-${round}-${i}`, input: { customer: 'c', amount: 100 } }, async (tx) => ({ id: await insertOrder(tx) })),
}
// Replays hit 1,000 keys stored beforehand.
for (let i = 0; i < 1000; i++) await variants.engine(i, 'replay')
variants.replay = async (i) => {
  const { replayed } = await idem.run({ scope: 'acct', key: `${run}-replay-${i % 1000}`, input: { customer: 'c', amount: 100 } }, () => {
    throw new Error('a replay ran the function')
  })
  if (!replayed) throw new Error('expected a replay')
}

console.log(`bench:mysql — ${(await pool.query('SELECT VERSION() AS v'))[0][0].v}, ${CONCURRENCY} concurrent callers, ${ROUNDS} interleaved rounds of ${SECONDS}s`)
let round = 0
const tps = await interleaved(variants, ROUNDS, (variant) => {
  const r = round++
  return throughput((i) => variant(i, r), { concurrency: CONCURRENCY, ms: SECONDS * 1000 }).then(({ value }) => value)
})
for (const [name, value] of Object.entries(tps)) console.log(`  mysql ${name.padEnd(8)} ${value.toFixed(0).padStart(7)} tx/s`)
await pool.end()
await admin.query(`DROP DATABASE \`${database}\``)
await admin.end()

ratio('core.mysql.fresh_vs_minimal_sql', tps.engine / tps.minimal)
ratio('core.mysql.fresh_vs_bare', tps.engine / tps.bare)
ratio('core.mysql.replay_vs_bare', tps.replay / tps.bare)
