// bench:inbox-parts: where the inbox's cost per message goes, without a broker (so the
// broker's share and its noise are out of the picture). 16 workers on one pool each
// handle "messages" as fast as Postgres allows: one transaction inserting one row,
// through ever more of idem:
//   bare          BEGIN, INSERT, COMMIT
//   inbox_row     plus the inbox's own row of idem_inbox (consumer, id, expiry), claimed
//                 by hand with the store's own prepared INSERT under the id's advisory lock
//   keys_row      plus the same id as a row of idem_keys instead, by hand (no lock):
//                 where the inbox kept its ids before schema version 5
//   store         the Postgres store's inbox table (its claim-with-record on idem_inbox,
//                 and commit), called directly
//   inbox         the whole consumer path: handleDelivery → inbox → the store's inbox table
// Variants are interleaved over BENCH_ROUNDS; each prints its machine CPU per message by
// process (the bench is CPU-bound on a small machine, so this is what the ratios follow).
// Last, it prints the disk each table takes per recorded id.
import { createInbox, DEFAULT_INBOX_RETENTION_MS, handleDelivery } from '../dist/queue/index.js'
import { inboxMarkByHand, queueBenchDatabase } from './queue-database.mjs'
import { cpuLedger, interleaved, ratio, throughput } from './support.mjs'

const SECONDS = Number(process.env.BENCH_SECONDS ?? 3)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7)
const CONCURRENCY = 16
const CONSUMER = 'claims-intake'

const database = await queueBenchDatabase('idem_bench_parts', CONCURRENCY + 2)
const { pool, schema, store, insert } = database
const data = Buffer.from(JSON.stringify({ amount: 7 }))
const utf8 = new TextDecoder()
const decode = (bytes) => JSON.parse(utf8.decode(bytes))

// Prepared once per connection, as the store prepares its own statements.
const inboxMark = inboxMarkByHand(schema)
const preparedOn = new WeakSet()

/** A message on a pool client of its own, BEGIN to COMMIT; `record` (if any) shares BEGIN's round trip. */
const byHand = (record) => async (id) => {
  const body = decode(data)
  const client = await pool.connect()
  try {
    if (record === undefined) {
      await client.query('BEGIN')
      await insert(client, body, id)
    } else {
      const prepare = preparedOn.has(client) ? '' : `${inboxMark.prepare}; `
      const results = await client.query(`BEGIN; ${prepare}${record(client.escapeLiteral(id))}`)
      preparedOn.add(client)
      if (results[results.length - 1].rowCount !== 1) throw new Error(`message ${id} was not new`)
      await insert(client, body, id)
    }
    await client.query('COMMIT')
  } finally {
    client.release()
  }
}

// What startConsumer passes (built once); never called here, as no message fails.
const retryDelay = () => 1_000
const inbox = createInbox({ store, consumer: CONSUMER })
/** One message through `through`'s whole consumer path. */
const throughInbox = (through) => async (id) => {
  const delivery = { id, data, headers: {}, deliveryCount: 1, redelivered: false, ack: async () => {}, nack: async () => {}, deadLetter: async () => {} }
  const result = await handleDelivery(through, delivery, (tx, message) => insert(tx, message.body, message.id), decode, retryDelay)
  if (result.status !== 'processed') throw new Error(`message ${id}: ${result.status}`)
}
const variants = {
  bare: byHand(undefined),
  inbox_row: byHand((id) => inboxMark.execute(`'${CONSUMER}'`, id, DEFAULT_INBOX_RETENTION_MS)),
  keys_row: byHand(
    (id) =>
      `INSERT INTO ${schema}.idem_keys (scope, key, fingerprint, outcome, created_at, expires_at) ` +
      `VALUES ('inbox:${CONSUMER}', ${id}, 'idem-inbox-v1', 'null', now(), now() + interval '14 days') ON CONFLICT DO NOTHING`,
  ),
  async store(id) {
    const body = decode(data)
    const session = await store.inbox.begin({ consumer: CONSUMER, key: id, waitMs: 5_000, retentionMs: DEFAULT_INBOX_RETENTION_MS })
    if (session.state !== 'new') throw new Error(`message ${id} was not new`)
    await insert(session.tx, body, id)
    await session.commit()
  },
  inbox: throughInbox(inbox),
}

let runs = 0
/** Runs `handle` from CONCURRENCY loops for `seconds` on empty tables, each message a new id. */
async function measure(handle, seconds, machine, name) {
  await pool.query(`TRUNCATE ${schema}.claims, ${schema}.idem_inbox, ${schema}.idem_keys`)
  await pool.query('CHECKPOINT').catch(() => {})
  const run = ++runs
  return machine.record(name, () => throughput((i) => handle(`r${run}-${i}`), { concurrency: CONCURRENCY, ms: seconds * 1000 }))
}

// Warm-up, not counted: the JIT, the pool's connections, the prepared statements.
const warmUp = cpuLedger({})
for (const [name, handle] of Object.entries(variants)) await measure(handle, 1, warmUp, name)
const machine = cpuLedger({ [process.pid]: 'worker' })
const rates = await interleaved(variants, ROUNDS, (handle, name) => measure(handle, SECONDS, machine, name))
console.log(
  `${Object.entries(rates)
    .map(([name, rate]) => `${name} ${rate.toFixed(0)}`)
    .join(', ')} messages/s (${CONCURRENCY} in flight, ${SECONDS} s × ${ROUNDS} rounds)`,
)
machine.print('message')

/** Bytes on disk (heap and indexes) per id recorded in `table`, after `insert` of SIZE_IDS ids shaped like a broker's (UUIDs). */
const SIZE_IDS = 100_000
async function bytesPerId(table, insert) {
  await pool.query(`TRUNCATE ${schema}.${table}`)
  await pool.query(insert)
  await pool.query(`VACUUM ${schema}.${table}`)
  const { rows } = await pool.query(`SELECT pg_total_relation_size($1::regclass) AS bytes`, [`${schema}.${table}`])
  return Number(rows[0].bytes) / SIZE_IDS
}
const inboxBytes = await bytesPerId(
  'idem_inbox',
  `INSERT INTO ${schema}.idem_inbox (consumer, message_key, expires_at) ` +
    `SELECT '${CONSUMER}', gen_random_uuid()::text, now() + interval '14 days' FROM generate_series(1, ${SIZE_IDS})`,
)
const keysBytes = await bytesPerId(
  'idem_keys',
  `INSERT INTO ${schema}.idem_keys (scope, key, fingerprint, outcome, created_at, expires_at) ` +
    `SELECT 'inbox:${CONSUMER}', gen_random_uuid()::text, 'idem-inbox-v1', 'null', now(), now() + interval '14 days' FROM generate_series(1, ${SIZE_IDS})`,
)
console.log(`storage per id (${SIZE_IDS} UUID ids, heap and indexes): idem_inbox ${inboxBytes.toFixed(0)} bytes, idem_keys ${keysBytes.toFixed(0)} bytes`)
await database.drop()
for (const name of ['inbox_row', 'keys_row', 'store', 'inbox']) ratio(`inbox_parts.${name}_vs_bare`, rates[name] / rates.bare)
ratio('inbox_parts.inbox_vs_inbox_row', rates.inbox / rates.inbox_row)
ratio('inbox_parts.inbox_row_bytes_vs_keys_row', inboxBytes / keysBytes)
