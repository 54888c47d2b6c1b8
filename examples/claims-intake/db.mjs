// The example's own tables and a small SQL seam over SQLite and Postgres, so the same
// service code runs on either. Statements use `?` placeholders; for Postgres they are
// rewritten to $1, $2, ...

const TABLES = [
  `CREATE TABLE IF NOT EXISTS orders (
     id TEXT PRIMARY KEY, account TEXT NOT NULL, customer TEXT NOT NULL,
     amount INTEGER NOT NULL, currency TEXT NOT NULL, charge_id TEXT NOT NULL, created_at TEXT NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS claims (
     claim_id TEXT NOT NULL, account TEXT NOT NULL, document TEXT NOT NULL, received_at TEXT NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS chunks (
     id TEXT PRIMARY KEY, claim_id TEXT NOT NULL, n INTEGER NOT NULL, text TEXT NOT NULL, embedding TEXT NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS summaries (
     id TEXT PRIMARY KEY, claim_id TEXT NOT NULL, prompt_version TEXT NOT NULL, text TEXT NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS payments (
     event_id TEXT NOT NULL, charge_id TEXT NOT NULL, amount INTEGER NOT NULL, received_at TEXT NOT NULL)`,
]

/** Wraps a better-sqlite3 Database (or a transaction on it). */
export function sqliteSql(db) {
  return {
    dialect: 'sqlite',
    async run(text, params = []) {
      return db.prepare(text).run(...params).changes
    },
    async all(text, params = []) {
      return db.prepare(text).all(...params)
    },
  }
}

/** Wraps a pg Pool or client (or a client inside a transaction). */
export function pgSql(client) {
  const numbered = (text) => {
    let n = 0
    return text.replace(/\?/g, () => `$${++n}`)
  }
  return {
    dialect: 'postgres',
    async run(text, params = []) {
      return (await client.query(numbered(text), params)).rowCount
    },
    async all(text, params = []) {
      return (await client.query(numbered(text), params)).rows
    },
  }
}

export async function createTables(sql) {
  for (const statement of TABLES) await sql.run(statement)
}
