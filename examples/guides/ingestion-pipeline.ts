// An ingestion pipeline made safe to replay without a key table: chunks are written under
// ids derived from what they are, and the LLM's summary is pinned down with memo before it
// is written, so a redelivered document, or two workers racing on it, leaves the same rows.
// DATABASE_URL=postgres://postgres@127.0.0.1:5432/test node --experimental-strip-types examples/guides/ingestion-pipeline.ts
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { contentId, createMemo, reconcile, upsert } from 'idem/data'
import { postgresDialect, postgresStore } from 'idem/postgres'

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, connectionTimeoutMillis: 5_000 })
pool.on('error', (error) => console.warn(error))
const schema = `guide_ingest_${randomBytes(4).toString('hex')}`
await pool.query(`CREATE SCHEMA ${schema}`)
const store = postgresStore({ pool, schema })
await store.migrate() // memo keeps its outputs in idem_keys
await pool.query(`CREATE TABLE ${schema}.chunks (id uuid PRIMARY KEY, doc_id text NOT NULL, n int NOT NULL, text text NOT NULL)`)
await pool.query(`CREATE TABLE ${schema}.summaries (id uuid PRIMARY KEY, doc_id text NOT NULL, prompt_version text NOT NULL, summary text NOT NULL)`)

// A stand-in for a model at temperature > 0: new wording on every call.
let llmCalls = 0
async function llmSummarise(text: string): Promise<string> {
  llmCalls++
  await new Promise((resolve) => setTimeout(resolve, 50))
  return `Summary #${llmCalls}: ${text.split(' ').slice(0, 5).join(' ')}…`
}

const memo = createMemo({ store })
const CHUNKER = 'chunker=v1' // in every id: a new chunker writes new rows instead of overwriting old ones
const chunkSpec = { schema, table: 'chunks', key: 'id', columns: ['doc_id', 'n', 'text'] }
const summarySpec = { schema, table: 'summaries', key: 'id', columns: ['doc_id', 'prompt_version', 'summary'] }

async function ingest(doc: { id: string; text: string }, promptVersion = 'summary-v3'): Promise<string> {
  const words = doc.text.split(' ')
  for (let n = 0; n * 8 < words.length; n++) {
    const text = words.slice(n * 8, (n + 1) * 8).join(' ')
    await upsert(postgresDialect, pool, chunkSpec, { id: contentId.uuid('doc', doc.id, 'chunk', n, CHUNKER), doc_id: doc.id, n, text })
  }
  // Committed before memo returns, so every replay writes the model's first answer.
  const summary = await memo('summarise-doc', { docId: doc.id, text: doc.text }, () => llmSummarise(doc.text), { version: promptVersion })
  await upsert(postgresDialect, pool, summarySpec, {
    id: contentId.uuid('doc-summary', doc.id, promptVersion),
    doc_id: doc.id,
    prompt_version: promptVersion,
    summary,
  })
  return summary
}

const count = async (table: string) => (await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${schema}.${table}`)).rows[0].n
try {
  const doc = {
    id: 'claim-42',
    text:
      'The insured reports water damage in the kitchen after a pipe burst on the night of ' +
      'the storm; a plumber repaired the pipe the next morning and the floor and two ' +
      'cabinets were replaced the following week at a cost of 4,200 euros.',
  }
  console.log(`delivery: ${await ingest(doc)}`)
  console.log(`redelivery: ${await ingest(doc)}`)
  const racing = await Promise.all([ingest(doc), ingest(doc)])
  console.log(`two workers at once: ${racing.join(' | ')}`)
  console.log(`LLM calls: ${llmCalls}; chunks: ${await count('chunks')}; summaries: ${await count('summaries')}`)
  const report = await reconcile({ dialect: postgresDialect, client: pool, schema, table: 'chunks', columns: ['doc_id', 'n'] })
  console.log(`reconcile: ${report.duplicateRows} duplicate chunk rows of ${report.totalRows}`)
  // A new prompt version is a new memo key and a new row beside the old one.
  console.log(`prompt v4: ${await ingest(doc, 'summary-v4')} (LLM calls: ${llmCalls}; summaries: ${await count('summaries')})`)
} finally {
  await pool.query(`DROP SCHEMA ${schema} CASCADE`)
  await pool.end()
}
