// npm start: the claims-intake service under injected faults, twice on the same
// traffic — once written naively, once with idem — and a table of what each left behind.
// Exits 0 only if every idem invariant holds.
import { serve } from '@hono/node-server'
import { rmSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { createClient } from 'idem/client'
import { reconcile } from 'idem/data'
import { seededRandom, startFaultProxy } from 'idem/testing'
import { makeDocument } from './chunker.mjs'
import { openDatabase } from './database.mjs'
import { createProgress } from './progress.mjs'
import { createService } from './service.mjs'

const HELP = `Usage: npm start -- [options]

Runs the claims-intake service twice on the same seeded traffic, naive and with idem,
through a fault injector that drops responses after commit and crashes the worker
before it acks (always on claim-1's first delivery, the incident this project began
with), then prints what each left behind. Exits 0 only if idem's invariants hold.

Options:
  --orders <n>       orders to place (default 300)
  --claims <n>       claims to submit (default 4; the first has 58 chunks)
  --drop <p>         probability a response is dropped after commit (default 0.3)
  --crash <p>        probability the worker dies before acking (default 0.3)
  --seed <n>         seed for every random choice (default 42)
  --concurrency <n>  clients placing orders at once (default 16)
  --data <dir>       where the SQLite files go (default .data/demo)
  -h, --help         show this help`

const { values: args } = parsedArgs({
  options: {
    orders: { type: 'string', default: '300' },
    claims: { type: 'string', default: '4' },
    drop: { type: 'string', default: '0.3' },
    crash: { type: 'string', default: '0.3' },
    seed: { type: 'string', default: '42' },
    concurrency: { type: 'string', default: '16' },
    data: { type: 'string', default: '.data/demo' },
    help: { type: 'boolean', short: 'h', default: false },
  },
})
if (args.help) {
  console.log(HELP)
  process.exit(0)
}
const options = {
  orders: whole('orders', args.orders, 1),
  claims: whole('claims', args.claims, 1),
  drop: probability('drop', args.drop),
  crash: probability('crash', args.crash),
  seed: whole('seed', args.seed, 0),
  concurrency: whole('concurrency', args.concurrency, 1),
  data: resolve(args.data),
}
const SEED_CHUNKS = 58
// The idem client's attempts per call, and how many times it comes back with the same key.
const ATTEMPTS = 8
const COME_BACK = 4

console.log(`idem demo: ${options.orders} orders and ${options.claims} claims, ${pct(options.drop)} of responses dropped after commit,`)
console.log(`${pct(options.crash)} of worker runs crash before the ack, seed ${options.seed}. Data: ${options.data} (reset: rm -rf ${options.data})`)
console.log('The same traffic runs twice: first through the service as usually first written (naive),')
console.log('then through the same service with idem. Clients retry lost responses; the broker redelivers unacked work.\n')

const results = {}
for (const mode of ['naive', 'idem']) results[mode] = await runPipeline(mode)
const ok = report(results)
process.exit(ok ? 0 : 1)

async function runPipeline(mode) {
  const file = join(options.data, `${mode}.db`)
  for (const suffix of ['', '-wal', '-shm']) rmSync(file + suffix, { force: true })
  const database = await openDatabase({ file })
  const random = seededRandom(options.seed)
  const service = createService({
    mode,
    database,
    crashBeforeAck: options.crash,
    random: seededRandom(options.seed + 1),
    incidentClaim: 'claim-1', // the seed incident: its worker dies before the ack, every run
  })
  const server = serve({ fetch: service.app.fetch, hostname: '127.0.0.1', port: 0 })
  await new Promise((ready) => server.once('listening', ready))
  const target = `http://127.0.0.1:${server.address().port}`
  const proxy = await startFaultProxy({ target, dropResponseProbability: options.drop, seed: options.seed, droppable: (r) => r.method === 'POST' })
  const send = mode === 'idem' ? idemSender(random) : naiveSender()
  const progress = createProgress(`${mode.padEnd(5)}`, options.orders + options.claims)
  const tally = { created: 0, replayed: 0, failed: 0, gaveUp: 0, claimsGaveUp: 0, retries: 0 }

  // Orders, from `concurrency` clients at once.
  let next = 0
  await Promise.all(
    Array.from({ length: options.concurrency }, async () => {
      while (next < options.orders) {
        const i = next++
        const account = `acct_${i % 7}`
        const body = JSON.stringify({ amount: 100 + i, currency: 'eur', customer: `cus_${i}` })
        const outcome = await send(`${proxy.url}/orders`, account, body)
        tally[outcome.status === 201 ? 'created' : outcome.gaveUp ? 'gaveUp' : 'failed']++
        if (outcome.replayed) tally.replayed++
        tally.retries += outcome.attempts - 1
        progress.tick()
      }
    }),
  )
  // Claims: accepted over HTTP (with the same faults), then worked off the queue.
  const claims = Array.from({ length: options.claims }, (_, i) => ({ claimId: `claim-${i + 1}`, chunks: i === 0 ? SEED_CHUNKS : 8 + i }))
  for (const claim of claims) {
    const body = JSON.stringify({ claimId: claim.claimId, document: makeDocument(claim.claimId, claim.chunks) })
    const outcome = await send(`${proxy.url}/claims`, 'acct_claims', body)
    claim.accepted = outcome.status === 202
    if (!claim.accepted) tally[outcome.gaveUp ? 'claimsGaveUp' : 'failed']++
    progress.tick()
  }
  while (await service.workOnce()) {}
  // The provider reports every charge by webhook through the same faults (a lost answer
  // makes it deliver again, with the same id), and someone posts one forged delivery.
  const webhookDeliveries = await service.provider.sendWebhooks(`${proxy.url}/webhooks/payments`)
  const forgedStatus = await service.provider.sendForgedWebhook(`${target}/webhooks/payments`)
  progress.done()

  const perClaim = []
  for (const claim of claims) {
    const [row] = await database.sql.all('SELECT count(*) AS n FROM chunks WHERE claim_id = ?', [claim.claimId])
    const summaries = await database.sql.all('SELECT DISTINCT text FROM summaries WHERE claim_id = ?', [claim.claimId])
    const [count] = await database.sql.all('SELECT count(*) AS n FROM summaries WHERE claim_id = ?', [claim.claimId])
    const emails = service.mailer.handed().filter((m) => m.subject === `Claim ${claim.claimId} received`).length
    perClaim.push({ ...claim, stored: Number(row.n), summaries: Number(count.n), wordings: summaries.length, emails })
  }
  const chunkDupes = await reconcile({ ...database.data, table: 'chunks', columns: ['claim_id', 'n'] })
  const summaryDupes = await reconcile({ ...database.data, table: 'summaries', columns: ['claim_id', 'prompt_version'] })
  const [orders] = await database.sql.all('SELECT count(*) AS n FROM orders')
  const [payments] = await database.sql.all("SELECT count(*) AS n, count(DISTINCT charge_id) AS charges, sum(CASE WHEN charge_id = 'ch_forged' THEN 1 ELSE 0 END) AS forged FROM payments")
  const result = {
    intended: options.orders,
    orderRows: Number(orders.n),
    charges: service.provider.ledger().length,
    tally,
    perClaim,
    duplicates: chunkDupes.duplicateRows + summaryDupes.duplicateRows,
    duplicateRate: Math.max(chunkDupes.duplicateRate, summaryDupes.duplicateRate),
    dropped: proxy.stats.dropped,
    redeliveries: service.broker.redeliveries(),
    llmCalls: service.llm.calls(),
    payments: { rows: Number(payments.n), charges: Number(payments.charges), forged: Number(payments.forged ?? 0), deliveries: webhookDeliveries, forgedStatus },
  }
  await proxy.close()
  await new Promise((done) => server.close(done))
  await database.close()
  return result
}

/**
 * idem's client: one key per order, on every retry; backoff with jitter. A client
 * that runs out of attempts comes back later with the same key (as the client docs
 * advise), up to `COME_BACK` times; after that it gives up without knowing the outcome.
 */
function idemSender(random) {
  const client = createClient({ maxAttempts: ATTEMPTS, backoff: { baseMs: 5, maxMs: 100 }, attemptTimeoutMs: 5_000, random })
  return async (url, account, body) => {
    let key
    let attempts = 0
    for (let round = 0; ; round++) {
      try {
        const result = await client.fetch(url, { method: 'POST', headers: { authorization: `Bearer ${account}`, 'content-type': 'application/json' }, body }, { key })
        return { status: result.response.status, attempts: attempts + result.attempts, replayed: result.replayed }
      } catch (error) {
        attempts += error.attempts ?? 1
        key = error.key
        // An answer (a 4xx or 5xx problem) is final; only "no answer" is worth coming back for.
        if (error.status !== undefined || key === undefined || round === COME_BACK) {
          return { status: error.status ?? 0, attempts, replayed: false, gaveUp: error.status === undefined }
        }
      }
    }
  }
}

/** The usual hand-written retry loop: try again on a network error, with no key. */
function naiveSender() {
  return async (url, account, body) => {
    for (let attempt = 1; ; attempt++) {
      try {
        const response = await fetch(url, { method: 'POST', headers: { authorization: `Bearer ${account}`, 'content-type': 'application/json' }, body })
        await response.arrayBuffer()
        return { status: response.status, attempts: attempt, replayed: false }
      } catch (error) {
        if (attempt === 8) return { status: 0, attempts: attempt, replayed: false }
        await new Promise((r) => setTimeout(r, 5))
      }
    }
  }
}

function report({ naive, idem }) {
  const seed = (r) => r.perClaim[0]
  // A claim whose client gave up may not have been accepted: then it left nothing at all.
  const everyClaim = (r, field, expected) => r.perClaim.every((c) => c[field] === expected(c) || (!c.accepted && c.stored === 0 && c[field] === 0))
  const rows = [
    ['orders placed (client saw 201)', naive.tally.created, idem.tally.created, options.orders],
    ['order rows in the database', naive.orderRows, idem.orderRows, options.orders],
    ['charges at the payment provider', naive.charges, idem.charges, options.orders],
    [`chunks indexed for ${seed(idem).claimId}`, seed(naive).stored, seed(idem).stored, SEED_CHUNKS],
    [`"claim received" emails for ${seed(idem).claimId}`, seed(naive).emails, seed(idem).emails, 1],
    [`summaries stored for ${seed(idem).claimId}`, seed(naive).summaries, seed(idem).summaries, 1],
    ['duplicate rows found by reconcile', naive.duplicates, idem.duplicates, 0],
    ['payment rows from the provider\'s webhooks', naive.payments.rows, idem.payments.rows, options.orders],
    ['forged webhook deliveries recorded', naive.payments.forged, idem.payments.forged, 0],
    ['orders answered by a replay (the stored 201)', naive.tally.replayed, idem.tally.replayed, '—'],
  ]
  // A client that gave up never learnt its order's outcome: that order took effect once or
  // not at all, never twice. Its retry, whenever it comes back with its key, is safe.
  const gaveUp = idem.tally.gaveUp + idem.tally.claimsGaveUp
  const invariants = [
    [idem.tally.gaveUp === 0 ? 'every order answered 201' : 'every order answered 201, but for those whose client gave up', idem.tally.created + idem.tally.gaveUp === options.orders && idem.tally.failed === 0],
    [idem.tally.gaveUp === 0 ? 'one order row per order' : 'one order row per answered order, at most one per other', idem.orderRows >= idem.tally.created && idem.orderRows <= options.orders],
    ['one charge per order row', idem.charges === idem.orderRows],
    ['every claim fully indexed, once', everyClaim(idem, 'stored', (c) => c.chunks)],
    ['one email per claim', everyClaim(idem, 'emails', () => 1)],
    ['one summary per claim, one wording', everyClaim(idem, 'summaries', () => 1) && everyClaim(idem, 'wordings', () => 1)],
    ['reconcile finds no duplicates', idem.duplicates === 0],
    ['one payment row per charge, however often its webhook came', idem.payments.rows === idem.charges && idem.payments.charges === idem.charges],
    ['the forged webhook refused (401), nothing recorded', idem.payments.forgedStatus === 401 && idem.payments.forged === 0],
  ]
  const width = Math.max(...rows.map((r) => r[0].length))
  const cell = (v) => String(v).padStart(8)
  console.log(`\n${'on the same traffic'.padEnd(width)}   ${'naive'.padStart(8)} ${'idem'.padStart(8)} ${'expected'.padStart(9)}`)
  console.log(`${'-'.repeat(width)}   ${'-'.repeat(8)} ${'-'.repeat(8)} ${'-'.repeat(9)}`)
  for (const [label, a, b, expected] of rows) console.log(`${label.padEnd(width)}   ${cell(a)} ${cell(b)} ${String(expected).padStart(9)}`)
  console.log(
    `\nFaults injected: naive ${naive.dropped} dropped responses, ${naive.redeliveries} redeliveries; ` +
      `idem ${idem.dropped} dropped responses, ${idem.redeliveries} redeliveries, ${idem.tally.retries} client retries (requests sent again, over all orders). ` +
      `Webhook deliveries: naive ${naive.payments.deliveries} for ${naive.charges} charges, idem ${idem.payments.deliveries} for ${idem.charges} (a lost answer is delivered again).`,
  )
  console.log('\nidem invariants:')
  for (const [label, holds] of invariants) console.log(`  ${holds ? 'ok  ' : 'FAIL'} ${label}`)
  const ok = invariants.every(([, holds]) => holds)
  if (!ok) console.log('\nAn idem invariant failed: see above.')
  else if (gaveUp === 0) console.log('\nEvery intent took effect exactly once under idem.')
  else {
    console.log(
      `\nNo intent took effect twice under idem. ${gaveUp} of ${options.orders + options.claims} clients gave up after ${ATTEMPTS * (COME_BACK + 1)} attempts ` +
        `without an answer (${pct(options.drop)} of responses were dropped): their orders took effect once or not at all, ` +
        'and a retry with the same key, whenever it comes, finishes them. This is the client giving up, not idem failing.',
    )
  }
  console.log('Explore the service yourself: npm run serve (then open http://127.0.0.1:3000/); see examples/claims-intake/README.md.')
  return ok
}

// An unknown flag or a missing value gets one line and the help, not a stack trace.
function parsedArgs(config) {
  try {
    return parseArgs(config)
  } catch (error) {
    fail(`${error.message.split('. ')[0]}.`)
  }
}

function whole(name, text, min) {
  const n = Number(text)
  if (!Number.isInteger(n) || n < min) fail(`--${name} must be a whole number ≥ ${min}, got ${text}`)
  return n
}
function probability(name, text) {
  const p = Number(text)
  if (!(p >= 0 && p < 1)) fail(`--${name} must be a probability in [0, 1), got ${text}`)
  return p
}
function fail(message) {
  console.error(`${message}\n\n${HELP}`)
  process.exit(2)
}
function pct(p) {
  return `${Math.round(p * 100)}%`
}
