// idem on Postgres, joining a transaction the caller already opened.
// DATABASE_URL=postgres://postgres@127.0.0.1:5432/test node examples/postgres.mjs
import pg from 'pg'
import { createIdem } from 'idem'
import { postgresStore } from 'idem/postgres'

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, connectionTimeoutMillis: 5_000 })
// An idle connection the server drops is reported here; without a listener it crashes the process.
pool.on('error', (error) => console.error('idle Postgres connection failed:', error.message))
const schema = process.env.IDEM_SCHEMA ?? 'public'
const store = postgresStore({ pool, schema })
await store.migrate() // idem_keys + idem_claim(), versioned; safe from many instances
await pool.query(`CREATE TABLE IF NOT EXISTS ${schema}.orders (id bigserial PRIMARY KEY, key text, amount int)`)
const idem = createIdem({ store })

async function placeOrder(account, key, amount) {
  const client = await pool.connect()
  try {
    await client.query('BEGIN')
    // The key row is written in this transaction: it commits with the order or not at all.
    const { value, replayed } = await idem.run({ scope: account, key, input: { amount }, tx: client }, async (tx) => {
      const { rows } = await tx.query(`INSERT INTO ${schema}.orders (key, amount) VALUES ($1, $2) RETURNING id`, [key, amount])
      return { orderId: rows[0].id }
    })
    await client.query('COMMIT')
    return { ...value, replayed }
  } catch (error) {
    await client.query('ROLLBACK')
    throw error
  } finally {
    client.release()
  }
}

const key = `order-${Date.now()}`
console.log(await placeOrder('account_42', key, 1500)) // { orderId: '1', replayed: false }
console.log(await placeOrder('account_42', key, 1500)) // { orderId: '1', replayed: true }
try {
  await placeOrder('account_42', key, 9999)
} catch (error) {
  console.log(error.name, error.code) // FingerprintMismatchError fingerprint-mismatch
}
await pool.end()
