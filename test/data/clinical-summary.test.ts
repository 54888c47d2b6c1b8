/**
 * The clinical-summary failure (issue 6), reproduced and fixed. A queue consumer
 * summarises each intake with an LLM and stores the summary. The broker redelivers a
 * message after a consumer-group rebalance, so the consumer runs twice for one intake,
 * sometimes at the same time. The LLM words its answer differently on every call.
 *
 * - Without idem: two rows with different wording for one intake; reconcile flags it.
 * - Upsert by content id alone: one row, but its wording changes under the reader's feet.
 * - memo + upsert keyed by (intake_id, prompt_version): one row, byte-identical across
 *   replays, the LLM called once per intake; reconcile reports 0.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { KeyStore } from '../../src/ports/key-store.js'
import { contentId, createMemo, reconcile, upsert, type ReconcileReport, type UpsertSpec } from '../../src/data/index.js'
import { postgresDialect, postgresStore } from '../../src/stores/postgres/index.js'
import { sqliteDialect, sqliteStore } from '../../src/stores/sqlite/index.js'
import { testSchema, type TestSchema } from '../support/postgres.js'
import { testSqlite } from './sqlite.js'

const PROMPT_VERSION = 'summary-prompt-v7'
const INTAKES = [
  { intakeId: 'intake-1001', text: 'Chest pain radiating to left arm since Monday; history of hypertension.' },
  { intakeId: 'intake-1002', text: 'Persistent cough for three weeks, no fever, non-smoker.' },
  { intakeId: 'intake-1003', text: 'Fall at home, right wrist swollen, able to move fingers.' },
]
type Intake = (typeof INTAKES)[number]

/** Samples its wording, as a real model does at temperature > 0. */
function fakeLlm() {
  const openers = ['Patient presents with', 'The patient reports', 'Chief complaint:', 'Presenting with']
  let calls = 0
  /** Every answer given, by prompt text. */
  const answers = new Map<string, string[]>()
  return {
    get calls() {
      return calls
    },
    answers,
    async summarise(text: string): Promise<string> {
      const n = calls++
      await new Promise((resolve) => setImmediate(resolve))
      const answer = `${openers[n % openers.length]} ${text.toLowerCase()} (sample ${n})`
      answers.set(text, [...(answers.get(text) ?? []), answer])
      return answer
    },
  }
}

interface SummaryRow {
  intake_id: string
  prompt_version: string
  summary: string
}

/** What the scenario needs from a database. */
interface Harness {
  /** The store memo keeps LLM outputs in. */
  memoStore: KeyStore<unknown>
  /** The naive consumer's write: a plain INSERT into `summaries_naive`. */
  insertNaive(row: SummaryRow): Promise<void>
  /** The fixed consumer's write: an upsert into `summaries` by the row's content id. */
  upsert(row: SummaryRow & { id: string }): Promise<void>
  rows(table: 'summaries_naive' | 'summaries' | 'summaries_upsert_only'): Promise<SummaryRow[]>
  /** The upsert-only consumer's write, into `summaries_upsert_only`. */
  upsertOnly(row: SummaryRow & { id: string }): Promise<void>
  reconcile(table: 'summaries_naive' | 'summaries'): Promise<ReconcileReport>
}

/** Delivers each intake twice: once, then again after a rebalance, the redelivery racing the original for one of them. */
async function deliverTwice(consume: (intake: Intake) => Promise<void>): Promise<void> {
  await Promise.all([consume(INTAKES[0]!), consume(INTAKES[0]!)]) // two consumers hold the message at once
  for (const intake of INTAKES.slice(1)) await consume(intake)
  for (const intake of INTAKES.slice(1)) await consume(intake) // redelivered after the rebalance
}

function itReproducesAndFixes(getHarness: () => Harness): void {
  let h: Harness
  beforeAll(() => {
    h = getHarness()
  })

  it('without idem: two summaries with different wording per intake, and reconcile flags it', async () => {
    const llm = fakeLlm()
    await deliverTwice(async ({ intakeId, text }) => {
      const summary = await llm.summarise(text)
      await h.insertNaive({ intake_id: intakeId, prompt_version: PROMPT_VERSION, summary })
    })

    const rows = await h.rows('summaries_naive')
    expect(rows).toHaveLength(6)
    for (const { intakeId } of INTAKES) {
      const wordings = rows.filter((r) => r.intake_id === intakeId).map((r) => r.summary)
      expect(wordings).toHaveLength(2)
      expect(wordings[0]).not.toBe(wordings[1])
    }
    const report = await h.reconcile('summaries_naive')
    expect(report).toMatchObject({ totalRows: 6, duplicateRows: 3, groupCount: 3, duplicateRate: 0.5, exceeded: true })
    expect(report.groups.map((g) => g.values).sort((a, b) => String(a.intake_id).localeCompare(String(b.intake_id)))).toEqual(
      INTAKES.map(({ intakeId }) => ({ intake_id: intakeId, prompt_version: PROMPT_VERSION })),
    )
  })

  it('upsert alone is not enough: one row, but a replay rewrites it with new wording', async () => {
    const llm = fakeLlm()
    const [intake] = INTAKES
    const consume = async ({ intakeId, text }: Intake): Promise<string> => {
      const summary = await llm.summarise(text)
      await h.upsertOnly({ id: contentId.uuid('intake-summary', intakeId, PROMPT_VERSION), intake_id: intakeId, prompt_version: PROMPT_VERSION, summary })
      return (await h.rows('summaries_upsert_only'))[0]!.summary
    }
    const before = await consume(intake!)
    const after = await consume(intake!)
    expect(await h.rows('summaries_upsert_only')).toHaveLength(1)
    expect(after).not.toBe(before)
  })

  it('with memo + upsert by (intake_id, prompt_version): one row per intake, byte-identical across replays', async () => {
    const llm = fakeLlm()
    const memo = createMemo({ store: h.memoStore })
    const seen = new Map<string, Set<string>>()
    let crashOnce = true

    const consume = async ({ intakeId, text }: Intake): Promise<void> => {
      // The output is committed before anything below runs.
      const summary = await memo('summarise-intake', { intakeId, text }, () => llm.summarise(text), { version: PROMPT_VERSION })
      if (intakeId === 'intake-1003' && crashOnce) {
        crashOnce = false
        throw new Error('consumer killed before its write') // the redelivery must reuse the stored summary
      }
      await h.upsert({
        id: contentId.uuid('intake-summary', intakeId, PROMPT_VERSION),
        intake_id: intakeId,
        prompt_version: PROMPT_VERSION,
        summary,
      })
      const row = (await h.rows('summaries')).find((r) => r.intake_id === intakeId)!
      seen.set(intakeId, (seen.get(intakeId) ?? new Set()).add(row.summary))
    }

    await expect(consume(INTAKES[2]!)).rejects.toThrow('consumer killed')
    await deliverTwice(consume)
    await deliverTwice(consume) // and a third and fourth time, for good measure

    expect(llm.calls).toBe(INTAKES.length)
    const rows = await h.rows('summaries')
    expect(rows).toHaveLength(INTAKES.length)
    for (const { intakeId, text } of INTAKES) {
      // The row never changed wording, and holds the model's one answer byte for byte.
      expect([...seen.get(intakeId)!]).toEqual(llm.answers.get(text))
      expect(rows.find((r) => r.intake_id === intakeId)!.summary).toBe(llm.answers.get(text)![0])
    }

    const report = await h.reconcile('summaries')
    expect(report).toMatchObject({ totalRows: 3, duplicateRows: 0, duplicateRate: 0, exceeded: false, groups: [] })
  })
}

const summariesSpec: UpsertSpec = { table: 'summaries', key: 'id', columns: ['intake_id', 'prompt_version', 'summary'] }
const reconcileBy = ['intake_id', 'prompt_version']

describe('clinical summary on SQLite (real files)', () => {
  const files = testSqlite('idem-clinical')
  const app = files.open('app')
  // memo gets a file of its own: its transaction holds that connection's writer while the LLM runs.
  const memoDb = files.open('memo')
  const memoStore = sqliteStore({ db: memoDb })
  memoStore.migrate()
  const table = 'id TEXT PRIMARY KEY, intake_id TEXT NOT NULL, prompt_version TEXT NOT NULL, summary TEXT NOT NULL'
  app.exec(`CREATE TABLE summaries_naive (id INTEGER PRIMARY KEY, intake_id TEXT NOT NULL, prompt_version TEXT NOT NULL, summary TEXT NOT NULL)`)
  app.exec(`CREATE TABLE summaries (${table})`)
  app.exec(`CREATE TABLE summaries_upsert_only (${table})`)
  afterAll(() => files.close())

  itReproducesAndFixes(() => ({
    memoStore: memoStore as KeyStore<unknown>,
    insertNaive: async (row) => {
      app.prepare('INSERT INTO summaries_naive (intake_id, prompt_version, summary) VALUES (?, ?, ?)').run(row.intake_id, row.prompt_version, row.summary)
    },
    upsert: async (row) => {
      app.transaction(() => upsert(sqliteDialect, app, summariesSpec, row))()
    },
    upsertOnly: async (row) => {
      upsert(sqliteDialect, app, { ...summariesSpec, table: 'summaries_upsert_only' }, row)
    },
    rows: async (name) => app.prepare(`SELECT intake_id, prompt_version, summary FROM ${name} ORDER BY intake_id, id`).all() as SummaryRow[],
    reconcile: (name) => reconcile({ dialect: sqliteDialect, client: app, table: name, columns: reconcileBy }),
  }))
})

const pgDb = await testSchema('idem_data_clinical', 6)

describe.skipIf(pgDb === undefined)('clinical summary on Postgres (real Postgres)', () => {
  const { pool, schema } = pgDb as TestSchema
  const memoStore = postgresStore({ pool, schema })
  const s = `"${schema}"`
  beforeAll(async () => {
    await memoStore.migrate()
    const table = 'id uuid PRIMARY KEY, intake_id text NOT NULL, prompt_version text NOT NULL, summary text NOT NULL'
    await pool.query(`CREATE TABLE ${s}.summaries_naive (id serial PRIMARY KEY, intake_id text NOT NULL, prompt_version text NOT NULL, summary text NOT NULL)`)
    await pool.query(`CREATE TABLE ${s}.summaries (${table})`)
    await pool.query(`CREATE TABLE ${s}.summaries_upsert_only (${table})`)
  })
  afterAll(() => pgDb?.drop())

  itReproducesAndFixes(() => ({
    memoStore: memoStore as KeyStore<unknown>,
    insertNaive: async (row) => {
      await pool.query(`INSERT INTO ${s}.summaries_naive (intake_id, prompt_version, summary) VALUES ($1, $2, $3)`, [
        row.intake_id,
        row.prompt_version,
        row.summary,
      ])
    },
    upsert: async (row) => {
      const client = await pool.connect()
      try {
        await client.query('BEGIN')
        await upsert(postgresDialect, client, { ...summariesSpec, schema }, row)
        await client.query('COMMIT')
      } catch (error) {
        await client.query('ROLLBACK')
        throw error
      } finally {
        client.release()
      }
    },
    upsertOnly: async (row) => {
      await upsert(postgresDialect, pool, { ...summariesSpec, schema, table: 'summaries_upsert_only' }, row)
    },
    rows: async (name) => (await pool.query(`SELECT intake_id, prompt_version, summary FROM ${s}.${name} ORDER BY intake_id, id`)).rows,
    reconcile: (name) => reconcile({ dialect: postgresDialect, client: pool, schema, table: name, columns: reconcileBy }),
  }))
})
