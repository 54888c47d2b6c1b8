// The idempotency options of a payments API, in a module of their own: the server mounts
// idempotency(options) with them, and `npx idem policy --config <this file>` prints the
// policy they make, for the API's docs.
import pg from 'pg'
import { postgresStore } from 'idem/postgres'

// A pool connects on its first query, so loading this module (as the CLI does) needs no database.
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, connectionTimeoutMillis: 5_000 })
pool.on('error', (error) => console.warn(error))

export default {
  store: postgresStore({ pool }),
  // scope gets the framework's own request: Express's, Fastify's or Nest's here.
  scope: (req) => req.headers.authorization ?? 'anonymous',
  methods: ['POST'],
  ttlMs: 48 * 60 * 60 * 1000,
  problemTypes: 'https://docs.example.com/errors',
}
