// The claims-intake service, in two modes over the same code:
//   idem  — the Idempotency-Key middleware, an inbox, content-id upserts, memoised LLM
//           output and an outbox for email;
//   naive — the same routes and worker as they are usually first written: retries
//           charge again, redeliveries write again.
// Every request's scope is the account named by `Authorization: Bearer <account>`.
import { createHash, randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { Hono } from 'hono'
import { Registry } from 'prom-client'
import { createEventStream } from 'idem'
import { contentId, createMemo, reconcile } from 'idem/data'
import { idempotency, webhookReceiver } from 'idem/hono'
import { prometheusMetrics } from 'idem/prometheus'
import { createDispatcher, createInbox, createOutbox } from 'idem/queue'
import { standardWebhooksSignature } from 'idem/webhooks'
import { createBroker } from './broker.mjs'
import { chunk } from './chunker.mjs'
import { embed } from './fakes/embedder.mjs'
import { createLlm } from './fakes/llm.mjs'
import { createMailer } from './fakes/mailer.mjs'
import { createPaymentProvider } from './fakes/payment-provider.mjs'

export const PROMPT_VERSION = 'summary-v3'
const CONSUMER = 'claims-intake-worker'
// The inbox consumer of the payment provider's webhooks.
const PAYMENT_WEBHOOKS = 'payment-webhooks'
// Rows that must be unique per intent: one summary per claim and prompt, one chunk per position.
const RECONCILED = [
  { table: 'summaries', columns: ['claim_id', 'prompt_version'] },
  { table: 'chunks', columns: ['claim_id', 'n'] },
]
const statusPage = readFileSync(new URL('./status-page.html', import.meta.url), 'utf8')

/** The account a request acts for: the bearer token, verbatim (any token is accepted here). */
export function accountOf(request) {
  const match = /^Bearer\s+(\S+)$/i.exec(request.headers.get('authorization') ?? '')
  return match ? match[1] : undefined
}

/**
 * @param {{ mode: 'idem' | 'naive', database: Awaited<ReturnType<import('./database.mjs').openDatabase>>,
 *           dropAfterCommit?: number, random?: () => number, crashBeforeAck?: number, incidentClaim?: string, webhookSecret?: string }} options
 *   `incidentClaim`: the claim whose first delivery always crashes before the ack (the seed incident).
 *   `webhookSecret`: the payment provider's webhook signing secret (`whsec_…`); a new one by default.
 */
export function createService({ mode, database, dropAfterCommit = 0, crashBeforeAck = 0, random = Math.random, incidentClaim, webhookSecret }) {
  const { sql, txSql, store } = database
  const provider = createPaymentProvider({ webhookSecret })
  const mailer = createMailer()
  const llm = createLlm(random)
  const broker = createBroker()
  // The service's own event stream: every front end below reports to it, and /metrics
  // (and the status page, which reads /metrics) is its one subscriber.
  const events = createEventStream()
  const registry = new Registry()
  prometheusMetrics({ registry, events, stores: [store.name], consumers: [CONSUMER, PAYMENT_WEBHOOKS] })
  const idem = mode === 'idem'
  const outbox = idem ? createOutbox({ store }) : undefined
  const inbox = idem ? createInbox({ store, consumer: CONSUMER, events }) : undefined
  const memo = idem ? createMemo({ store, events }) : undefined
  const dispatcher = idem
    ? createDispatcher({
        store,
        events,
        deliver: async (row) => {
          if (row.topic === 'intake') broker.publish(row.payload)
          else await mailer.send({ ...row.payload, idempotencyKey: row.dedupeKey })
        },
        backoff: { baseMs: 10, maxMs: 100 },
      })
    : undefined

  const app = new Hono()
  app.onError((error, c) => {
    console.error(error)
    return c.json({ error: 'internal' }, 500)
  })

  // FAULT_DROP_AFTER_COMMIT: the response is lost after the work committed, so the
  // client cannot tell whether it happened and must retry.
  app.use('*', async (c, next) => {
    await next()
    if (c.req.method === 'POST' && dropAfterCommit > 0 && random() < dropAfterCommit) c.env?.incoming?.socket?.destroy()
  })
  // The provider's webhooks carry its signature, not an account.
  app.use('*', async (c, next) => {
    if (c.req.method === 'POST' && !c.req.path.startsWith('/webhooks/') && accountOf(c.req.raw) === undefined) {
      return c.json({ type: 'about:blank', title: 'Authorization: Bearer <account> is required', status: 401 }, 401)
    }
    await next()
  })
  if (idem) {
    app.use(
      '*',
      idempotency({
        store,
        scope: (c) => accountOf(c.req.raw),
        routes: ['/orders', '/claims'],
        events,
      }),
    )
  }


  app.post('/orders', async (c) => {
    const account = accountOf(c.req.raw)
    const order = await readOrder(c.req)
    if (typeof order === 'string') return c.json({ type: 'about:blank', title: order, status: 400 }, 400)
    const held = c.get('idem')
    // The provider keeps its own ledger; idem passes it a key derived from ours, so a
    // retry after a rollback cannot charge twice either.
    const charge = await provider.charge({
      ...order,
      idempotencyKey: held ? derive(held.scope, held.key, 'charge') : undefined,
    })
    const row = { id: held ? `ord_${contentId(held.scope, held.key).slice(0, 16)}` : `ord_${randomUUID()}`, account, ...order }
    const tx = held ? txSql(held.tx) : sql
    await tx.run('INSERT INTO orders (id, account, customer, amount, currency, charge_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)', [
      row.id, account, row.customer, row.amount, row.currency, charge.id, new Date().toISOString(),
    ])
    return c.json({ ...row, chargeId: charge.id }, 201, { location: `/orders/${row.id}` })
  })

  app.get('/orders/:id', async (c) => {
    const [row] = await sql.all('SELECT * FROM orders WHERE id = ? AND account = ?', [c.req.param('id'), accountOf(c.req.raw)])
    return row ? c.json(row) : c.json({ type: 'about:blank', title: 'No such order', status: 404 }, 404)
  })

  app.post('/claims', async (c) => {
    const body = await c.req.json().catch(() => undefined)
    if (!body || typeof body.claimId !== 'string' || typeof body.document !== 'string') {
      return c.json({ type: 'about:blank', title: 'Send {claimId, document}', status: 400 }, 400)
    }
    const account = accountOf(c.req.raw)
    const held = c.get('idem')
    const tx = held ? txSql(held.tx) : sql
    await tx.run('INSERT INTO claims (claim_id, account, document, received_at) VALUES (?, ?, ?, ?)', [
      body.claimId, account, body.document, new Date().toISOString(),
    ])
    const job = { claimId: body.claimId, account, document: body.document }
    // With idem the job is queued in the request's transaction (outbox); naively it is
    // published directly, and lost or doubled when something fails in between.
    if (held) await outbox.add(held.tx, { topic: 'intake', payload: job, dedupeKey: `intake:${account}:${body.claimId}` })
    else broker.publish(job)
    return c.json({ claimId: body.claimId, status: 'accepted' }, 202)
  })

  app.get('/claims/:claimId', async (c) => {
    const claimId = c.req.param('claimId')
    const [chunks] = await sql.all('SELECT count(*) AS n FROM chunks WHERE claim_id = ?', [claimId])
    const summaries = await sql.all('SELECT text FROM summaries WHERE claim_id = ?', [claimId])
    const emails = mailer.handed().filter((m) => m.subject.includes(claimId)).length
    return c.json({ claimId, chunks: Number(chunks.n), emails, summaries: summaries.length, summary: summaries[0]?.text ?? null })
  })

  // The provider reports each charge by webhook. With idem the signature is checked on the
  // raw bytes before anything is recorded, and the event id goes into the inbox in the same
  // transaction as the payment row, so a redelivery is answered without a second row.
  // Naively every delivery that parses is recorded, signed or not, as often as it comes.
  const recordPayment = (db, eventId, data) =>
    db.run('INSERT INTO payments (event_id, charge_id, amount, received_at) VALUES (?, ?, ?, ?)', [eventId, data.chargeId, data.amount, new Date().toISOString()])
  if (idem) {
    app.post(
      '/webhooks/payments',
      webhookReceiver({
        inbox: createInbox({ store, consumer: PAYMENT_WEBHOOKS, events }),
        verify: standardWebhooksSignature({ secret: provider.webhookSecret }),
        events,
        handler: (tx, event) => recordPayment(txSql(tx), event.id, event.body.data),
      }),
    )
  } else {
    app.post('/webhooks/payments', async (c) => {
      const event = await c.req.json().catch(() => undefined)
      if (event?.data === undefined) return c.json({ type: 'about:blank', title: 'Not a payment event', status: 400 }, 400)
      await recordPayment(sql, c.req.header('webhook-id') ?? randomUUID(), event.data)
      return c.json({ received: true })
    })
  }

  app.get('/ledger', (c) => c.json(provider.ledger()))
  app.get('/metrics', async (c) => c.text(await registry.metrics(), 200, { 'content-type': registry.contentType }))
  app.get('/healthz', async (c) => {
    await sql.all('SELECT 1 AS ok')
    return c.json({ ok: true, mode, database: database.kind })
  })
  app.get('/', (c) => c.html(statusPage))

  /** Processes one message from the broker; returns false when none was ready. */
  async function workOnce() {
    if (dispatcher) await dispatcher.drain()
    const message = broker.receive()
    if (message === undefined) return false
    const job = message.body
    const crash = () => (job.claimId === incidentClaim && message.deliveries === 1) || (crashBeforeAck > 0 && random() < crashBeforeAck)
    if (!idem) {
      for (const [n, text] of chunk(job.document).entries()) {
        await sql.run('INSERT INTO chunks (id, claim_id, n, text, embedding) VALUES (?, ?, ?, ?, ?)', [
          randomUUID(), job.claimId, n, text, JSON.stringify(embed(text)),
        ])
      }
      const summary = await llm.summarise(job.claimId, job.document)
      await sql.run('INSERT INTO summaries (id, claim_id, prompt_version, text) VALUES (?, ?, ?, ?)', [
        randomUUID(), job.claimId, PROMPT_VERSION, summary,
      ])
      await mailer.send({ to: job.account, subject: `Claim ${job.claimId} received` })
      if (crash()) broker.redeliver(message)
      else broker.ack(message)
      return true
    }
    // The LLM's wording is pinned first (committed on its own), so a replay reuses it.
    const summary = await memo('summarise-claim', { claimId: job.claimId, document: job.document }, () => llm.summarise(job.claimId, job.document), {
      version: PROMPT_VERSION,
    })
    const result = await inbox.consume({ id: message.id, body: job }, async (tx) => {
      const db = txSql(tx)
      for (const [n, text] of chunk(job.document).entries()) {
        await db.run(
          'INSERT INTO chunks (id, claim_id, n, text, embedding) VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET text = excluded.text, embedding = excluded.embedding',
          [contentId.uuid(job.claimId, n, 'embed=v1'), job.claimId, n, text, JSON.stringify(embed(text))],
        )
      }
      await db.run(
        'INSERT INTO summaries (id, claim_id, prompt_version, text) VALUES (?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET text = excluded.text',
        [contentId.uuid(job.claimId, PROMPT_VERSION), job.claimId, PROMPT_VERSION, summary],
      )
      await outbox.add(tx, {
        topic: 'email',
        payload: { to: job.account, subject: `Claim ${job.claimId} received` },
        dedupeKey: `claim-received:${job.account}:${job.claimId}`,
      })
    })
    if (result.status === 'failed' || result.status === 'in-flight') broker.redeliver(message)
    else if (crash()) broker.redeliver(message) // died after commit, before the ack
    else broker.ack(message)
    if (dispatcher) await dispatcher.drain()
    return true
  }

  /**
   * Checks the tables that must hold one row per intent, as the operators' reconcile job
   * does; the results go to the event stream, so /metrics shows the duplicate ratio.
   */
  async function reconcileNow() {
    return Promise.all(RECONCILED.map((check) => reconcile({ ...database.data, ...check, limit: 0, events })))
  }

  return { app, mode, provider, mailer, llm, broker, workOnce, reconcileNow, registry, events }
}

function derive(scope, key, step) {
  return createHash('sha256').update(`${scope.length}:${scope}${key.length}:${key}${step}`).digest('hex')
}

// Reads through Hono's request (c.req), which serves the bytes the middleware read.
async function readOrder(request) {
  const type = (request.header('content-type') ?? '').split(';')[0].trim()
  let fields
  if (type === 'application/json') fields = await request.json().catch(() => undefined)
  else if (type === 'application/x-www-form-urlencoded') fields = Object.fromEntries(new URLSearchParams(await request.text()))
  else return 'Send JSON or form-encoded {amount, currency, customer}'
  if (!fields || typeof fields !== 'object') return 'The body is not a JSON object'
  const amount = Number(fields.amount)
  if (!Number.isInteger(amount) || amount <= 0) return 'amount must be a positive whole number (minor units)'
  if (typeof fields.currency !== 'string' || !/^[a-z]{3}$/i.test(fields.currency)) return 'currency must be a 3-letter code'
  if (typeof fields.customer !== 'string' || fields.customer.length === 0) return 'customer is required'
  return { amount, currency: fields.currency.toLowerCase(), customer: fields.customer }
}
