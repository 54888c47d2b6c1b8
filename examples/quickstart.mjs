// The smallest useful idem program: a payment that must happen once per key,
// on an embedded SQLite file. Run it twice with `node examples/quickstart.mjs`
// (or `bun examples/quickstart.mjs`, or `deno run -A examples/quickstart.mjs`).
import { createIdem } from 'idem'
import { openSqlite, sqliteStore } from 'idem/sqlite'

// The runtime's own SQLite: better-sqlite3 on Node, bun:sqlite on Bun, node:sqlite on Deno.
const db = await openSqlite(process.env.QUICKSTART_DB ?? 'quickstart.db')
const store = sqliteStore({ db })
store.migrate() // creates idem_keys (versioned, safe to repeat)
db.exec('CREATE TABLE IF NOT EXISTS charges (id INTEGER PRIMARY KEY, customer TEXT, amount INTEGER)')

const idem = createIdem({ store })
const key = 'charge-2026-11-30-alice' // minted once by the client, reused on every retry

for (let attempt = 1; attempt <= 3; attempt++) {
  const { value, replayed } = await idem.run(
    { scope: 'account_42', key, input: { customer: 'alice', amount: 1500 } },
    (tx) => {
      // Runs inside the same transaction that records the key.
      const { lastInsertRowid } = tx.prepare('INSERT INTO charges (customer, amount) VALUES (?, ?)').run('alice', 1500)
      return { chargeId: Number(lastInsertRowid), amount: 1500 }
    },
  )
  console.log(`attempt ${attempt}: charge ${value.chargeId}${replayed ? ' (replayed)' : ''}`)
}
const { n } = db.prepare('SELECT count(*) AS n FROM charges').get()
console.log(`charges in the table: ${n}`)
