// A fake payment provider with its own charge ledger. Like Stripe, it honours an
// idempotency key of its own: a repeated key returns the first charge instead of
// charging again. Callers that send no key get a new charge every time.
//
// Like most providers, it reports each charge back by webhook, signed as the Standard
// Webhooks spec says (`webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64
// HMAC-SHA256 of id.timestamp.body>` under a `whsec_` secret), and delivers a webhook again,
// with the same id, until it gets a 2xx answer: a receiver sees some twice.
import { createHmac, randomBytes } from 'node:crypto'

/** @param {{ webhookSecret?: string }} options a `whsec_` secret to sign with; a new one by default */
export function createPaymentProvider({ webhookSecret = `whsec_${randomBytes(24).toString('base64')}` } = {}) {
  const ledger = []
  const byKey = new Map()
  const key = Buffer.from(webhookSecret.replace(/^whsec_/, ''), 'base64')
  /** Headers signing `body` as event `id` now, with `signingKey` (the provider's own unless forged). */
  const signed = (id, body, signingKey = key) => {
    const timestamp = String(Math.floor(Date.now() / 1000))
    const signature = createHmac('sha256', signingKey).update(`${id}.${timestamp}.${body}`).digest('base64')
    return { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': `v1,${signature}` }
  }
  /** Posts one delivery until a 2xx answer, `attempts` times at most; the answers' statuses. */
  const deliver = async (url, id, body, signingKey, attempts) => {
    const statuses = []
    for (let attempt = 1; attempt <= attempts; attempt++) {
      try {
        const response = await fetch(url, { method: 'POST', headers: signed(id, body, signingKey), body })
        await response.arrayBuffer()
        statuses.push(response.status)
        if (response.ok || (response.status >= 400 && response.status < 500)) return statuses
      } catch {
        statuses.push(0) // no answer (the response was lost): deliver again
      }
    }
    return statuses
  }
  return {
    /** Charges a customer; `idempotencyKey` makes repeats harmless. */
    async charge({ amount, currency, customer, idempotencyKey }) {
      await Promise.resolve() // a network call, in spirit
      if (idempotencyKey !== undefined && byKey.has(idempotencyKey)) return byKey.get(idempotencyKey)
      const charge = { id: `ch_${ledger.length + 1}`, amount, currency, customer, idempotencyKey: idempotencyKey ?? null }
      ledger.push(charge)
      if (idempotencyKey !== undefined) byKey.set(idempotencyKey, charge)
      return charge
    },
    ledger: () => [...ledger],
    /** The secret the receiver verifies webhooks with, as a provider's dashboard shows it. */
    webhookSecret,
    /**
     * Sends a `charge.succeeded` webhook for every charge to `url`, each until it is answered
     * 2xx (8 attempts at most), `concurrency` at a time; returns how many deliveries it sent.
     */
    async sendWebhooks(url, { concurrency = 8 } = {}) {
      let next = 0
      let sent = 0
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (next < ledger.length) {
            const charge = ledger[next++]
            const body = JSON.stringify({ type: 'charge.succeeded', data: { chargeId: charge.id, amount: charge.amount, currency: charge.currency } })
            const statuses = await deliver(url, `msg_${charge.id}`, body, key, 8)
            sent += statuses.length
          }
        }),
      )
      return sent
    },
    /** One `charge.succeeded` for a charge that never happened, signed with a key that is not the provider's: the answer's status. */
    async sendForgedWebhook(url) {
      const body = JSON.stringify({ type: 'charge.succeeded', data: { chargeId: 'ch_forged', amount: 100_000, currency: 'eur' } })
      const statuses = await deliver(url, 'msg_forged', body, randomBytes(24), 1)
      return statuses[0]
    },
  }
}
