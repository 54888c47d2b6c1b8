// bench:core: what the engine costs on top of the transaction it protects.
// Postgres (16 concurrent callers): (a) a bare transaction with one INSERT, (b) the same
// plus a hand-written minimal key row, (c) the same INSERT behind the hand-written key
// handling of bench/hand-written.mjs (advisory lock and read, the row at commit), (d) the
// engine doing the same INSERT, (e) replays. Besides throughput, the CPU each variant
// costs per call, and what of it the bench's own Postgres backends spent (read from
// /proc: Postgres on this machine).
// SQLite: microseconds the engine adds per call over the bare transaction.
import Database from 'better-sqlite3'
import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { createIdem } from '../dist/index.js'
import { postgresStore } from '../dist/stores/postgres/index.js'
import { sqliteStore } from '../dist/stores/sqlite/index.js'
import { fingerprintOf, handWrittenKeys, handWrittenTable } from './hand-written.mjs'
import { cpuLedger, interleaved, ratio, throughput } from './support.mjs'

const PG_URL = process.env.IDEM_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const SECONDS = Number(process.env.BENCH_SECONDS ?? 2)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5)
const CONCURRENCY = 16

async function benchPostgres() {
  const schema = `idem_bench_${process.pid}`
  // Connections kept for the whole run (no idle timeout), so their backends are the ones measured.
  const pool = new pg.Pool({ connectionString: PG_URL, max: CONCURRENCY, connectionTimeoutMillis: 10_000, idleTimeoutMillis: 0 })
  // As the docs ask of every app: an idle connection Postgres drops must not end the bench.
  pool.on('error', (error) => console.error(`idle Postgres connection failed: ${error.message}`))
  await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE; CREATE SCHEMA ${schema}`)
  const store = postgresStore({ pool, schema })
  await store.migrate()
  await pool.query(`CREATE TABLE ${schema}.orders (id bigserial PRIMARY KEY, customer text NOT NULL, amount integer NOT NULL)`)
  // The hand-written minimal key table: one row of key and outcome per call, nothing else.
  await pool.query(`CREATE TABLE ${schema}.minimal_keys (scope text, key text, outcome text, PRIMARY KEY (scope, key))`)
  await pool.query(handWrittenTable(schema))
  const hand = handWrittenKeys({ pool, schema })
  const idem = createIdem({ store })
  const run = randomUUID().slice(0, 8)
  const insertOrder = (tx) => tx.query(`INSERT INTO ${schema}.orders (customer, amount) VALUES ($1, $2) RETURNING id`, ['c', 100])

  const variants = {
    bare: async () => {
      const client = await pool.connect()
      try {
        await client.query('BEGIN')
        await insertOrder(client)
        await client.query('COMMIT')
      } finally {
        client.release()
      }
    },
    minimal: async (i, round) => {
      const client = await pool.connect()
      try {
        await client.query('BEGIN')
        const { rows } = await insertOrder(client)
        await client.query(`INSERT INTO ${schema}.minimal_keys (scope, key, outcome) VALUES ($1, $2, $3)`, [
          'acct',
          `${run}-${round}-${i}`,
          JSON.stringify({ id: rows[0].id }),
        ])
        await client.query('COMMIT')
      } finally {
        client.release()
      }
    },
    hand_written: async (i, round) => {
      const key = `${run}-${round}-${i}`
      const answer = await hand.handle({ scope: 'acct', key, fingerprint: fingerprintOf('POST', '/orders', key) }, async (client) => {
        const { rows } = await insertOrder(client)
        return { status: 201, body: JSON.stringify({ id: rows[0].id }) }
      })
      if (answer.replayed) throw new Error('a fresh key replayed')
    },
    engine: async (i, round) => {
      await idem.run({ scope: 'acct', key: `${run}-${round}-${i}`, input: { customer: 'c', amount: 100 } }, async (tx) => {
        const { rows } = await insertOrder(tx)
        return { id: rows[0].id }
      })
    },
  }
  // Replays hit 1,000 keys stored beforehand.
  for (let i = 0; i < 1000; i++) await variants.engine(i, 'replay')
  variants.replay = async (i) => {
    const { replayed } = await idem.run({ scope: 'acct', key: `${run}-replay-${i % 1000}`, input: { customer: 'c', amount: 100 } }, () => {
      throw new Error('a replay ran the function')
    })
    if (!replayed) throw new Error('expected a replay')
  }

  let round = 0
  const machine = cpuLedger({ [process.pid]: 'bench', ...(await backendsOf(pool)) })
  const tps = await interleaved(variants, ROUNDS, (variant, name) => {
    const r = round++
    return machine.record(name, () => throughput((i) => variant(i, r), { concurrency: CONCURRENCY, ms: SECONDS * 1000 }))
  })
  machine.print('call')
  const backends = Object.fromEntries(Object.keys(variants).map((name) => [name, machine.micros(name, BACKENDS)]))
  await pool.query(`DROP SCHEMA ${schema} CASCADE`)
  await pool.end()
  return { tps, backends }
}

const BACKENDS = 'pg backends'

/** The process ids of the pool's connections (all `CONCURRENCY` of them opened at once), labelled for `cpuLedger`. */
async function backendsOf(pool) {
  const clients = await Promise.all(Array.from({ length: CONCURRENCY }, () => pool.connect()))
  const pids = await Promise.all(clients.map(async (client) => (await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid))
  for (const client of clients) client.release()
  return Object.fromEntries(pids.map((pid) => [pid, BACKENDS]))
}

function benchSqlite() {
  const dir = mkdtempSync(join(tmpdir(), 'idem-bench-'))
  const db = new Database(join(dir, 'bench.db'))
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = NORMAL')
  const store = sqliteStore({ db })
  store.migrate()
  db.exec('CREATE TABLE orders (id INTEGER PRIMARY KEY, customer TEXT NOT NULL, amount INTEGER NOT NULL)')
  const insert = db.prepare('INSERT INTO orders (customer, amount) VALUES (?, ?)')
  const idem = createIdem({ store })
  const calls = 20_000
  let seq = 0
  const variants = {
    bare: async () => {
      db.exec('BEGIN IMMEDIATE')
      insert.run('c', 100)
      db.exec('COMMIT')
    },
    engine: async () => {
      await idem.run({ scope: 'acct', key: `k-${seq++}`, input: { customer: 'c', amount: 100 } }, (tx) => ({
        id: Number(insert.run('c', 100).lastInsertRowid),
      }))
    },
    replay: async (i) => {
      await idem.run({ scope: 'acct', key: `k-${i % 1000}`, input: { customer: 'c', amount: 100 } }, () => {
        throw new Error('a replay ran the function')
      })
    },
  }
  return { db, dir, variants, calls }
}

async function microsPerCall(op, calls) {
  const started = performance.now()
  for (let i = 0; i < calls; i++) await op(i)
  return ((performance.now() - started) * 1000) / calls
}

console.log(`bench:core — Postgres, ${CONCURRENCY} concurrent callers, ${ROUNDS} interleaved rounds of ${SECONDS}s`)
const { tps: pgTps, backends } = await benchPostgres()
for (const [name, value] of Object.entries(pgTps)) {
  const cpu = backends[name] === undefined ? '' : `   Postgres backends ${backends[name].toFixed(0).padStart(4)} µs/call`
  console.log(`  postgres ${name.padEnd(12)} ${value.toFixed(0).padStart(7)} tx/s${cpu}`)
}

const lite = benchSqlite()
console.log(`bench:core — SQLite (WAL, synchronous=NORMAL), ${lite.calls} sequential calls per round`)
const us = await interleaved(lite.variants, ROUNDS, (variant) => microsPerCall(variant, lite.calls))
for (const [name, value] of Object.entries(us)) console.log(`  sqlite ${name.padEnd(8)} ${value.toFixed(1).padStart(7)} µs/call`)
lite.db.close()
rmSync(lite.dir, { recursive: true, force: true })

ratio('core.pg.fresh_vs_minimal_sql', pgTps.engine / pgTps.minimal)
ratio('core.pg.fresh_vs_hand_written', pgTps.engine / pgTps.hand_written)
// Postgres CPU per call of the engine's key over that of the hand-written key, each over the bare transaction's.
if (backends.engine !== undefined) ratio('core.pg.backend_cpu_key_vs_hand_written_key', (backends.engine - backends.bare) / (backends.hand_written - backends.bare))
ratio('core.pg.fresh_vs_bare', pgTps.engine / pgTps.bare)
ratio('core.pg.replay_vs_bare', pgTps.replay / pgTps.bare)
ratio('core.sqlite.overhead_us', us.engine - us.bare, 1)
ratio('core.sqlite.replay_us', us.replay, 1)
