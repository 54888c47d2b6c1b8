// A fake payment provider with its own charge ledger. Like Stripe, it honours an
// idempotency key of its own: a repeated key returns the first charge instead of
// charging again. Callers that send no key get a new charge every time.

export function createPaymentProvider() {
  const ledger = []
  const byKey = new Map()
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
  }
}
