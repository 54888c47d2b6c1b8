// Makes each of the four failures an operator must hear of happen once, with idem as an
// app imports it, and prints what each answered: a store that is down (the HTTP
// middleware answers 503), a message dead-lettered by the inbox, a call whose lease was
// lost (the store refused its outcome: another call holds the key), a webhook delivery
// with no signature; and a webhook whose inbox's store is down (503). argv[2]: `default` (the logger idem starts with), `silent`
// (`idemEvents.setLogger(false)`) or `pino` (`idemEvents.setLogger(pino())`, to stdout).
import pg from 'pg'
import pino from 'pino'
import { createLeasedIdem, idemEvents } from 'idem'
import { idempotency, webhookReceiver } from 'idem/fetch'
import { memoryLeasedStore, memoryStore } from 'idem/memory'
import { postgresStore } from 'idem/postgres'
import { createInbox } from 'idem/queue'
import { stripeSignature } from 'idem/webhooks'

const mode = process.argv[2]
if (mode === 'silent') idemEvents.setLogger(false)
if (mode === 'pino') idemEvents.setLogger(pino({ base: undefined }))

// Nothing listens on port 1: every connection is refused.
const pool = new pg.Pool({ host: '127.0.0.1', port: 1, user: 'postgres', connectionTimeoutMillis: 2_000 })
pool.on('error', () => {})
const protect = idempotency({ store: postgresStore({ pool }), scope: () => 'acct_1' })
const order = new Request('http://127.0.0.1/orders', { method: 'POST', headers: { 'idempotency-key': '"order-1"', 'content-type': 'application/json' }, body: '{"card":"4242424242424242"}' })
const answered = await protect(order, async () => new Response('{}', { status: 201 }))

const inbox = createInbox({ store: memoryStore(), consumer: 'orders', maxAttempts: 1 })
const consumed = await inbox.consume({ id: 'msg-1', body: { card: '4242424242424242' } }, () => {
  throw new Error('the order cannot be parsed')
})

// The memory store, except that a lease's outcome is refused, as when another call took the key over.
const leased = memoryLeasedStore()
const fenced = {
  name: leased.name,
  maxOutcomeBytes: leased.maxOutcomeBytes,
  async claim(...args) {
    const claim = await leased.claim(...args)
    if (claim.state !== 'acquired') return claim
    const { lease } = claim
    return { ...claim, lease: { renew: (ms) => lease.renew(ms), saveStep: (n, r) => lease.saveStep(n, r), release: () => lease.release(), fencingToken: () => lease.fencingToken(), complete: async () => false } }
  },
}
const lost = await createLeasedIdem({ store: fenced }).run({ scope: 'acct_1', key: 'charge-1', input: 1 }, () => 'charged').catch((error) => error.code)

const receive = webhookReceiver({ inbox: createInbox({ store: memoryStore(), consumer: 'stripe-webhooks' }), verify: stripeSignature({ secret: 'whsec_never_logged' }), handler: () => {} })
const refused = await receive(new Request('http://127.0.0.1/webhooks/stripe', { method: 'POST', body: '{"id":"evt_1","secret_field":"body never logged"}' }))

// A webhook whose inbox's store is down: answered 503, so the provider delivers it again.
const downInbox = createInbox({ store: postgresStore({ pool }), consumer: 'shop-webhooks' })
const receiveDown = webhookReceiver({ inbox: downInbox, eventId: 'body-digest', handler: () => {} })
const unrecorded = await receiveDown(new Request('http://127.0.0.1/webhooks/shop', { method: 'POST', body: '{"card":"4242424242424242"}' }))

console.log(`answered ${answered.status}, ${consumed.status}, ${lost}, webhook ${refused.status}, webhook ${unrecorded.status}`)
await pool.end()
