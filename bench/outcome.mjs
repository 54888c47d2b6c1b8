// bench:outcome: what storing an outcome costs next to JSON.stringify of the same value
// (serializeOutcome checks that the value has an exact JSON form). Two outcomes: the
// record the HTTP middleware stores (status, header pairs, base64 body) and an engine
// outcome with a Date, nested objects and an array. `RATIO outcome.<value>_vs_json_stringify`.
import { serializeOutcome } from '../dist/core/outcome.js'
import { cpuNanosPerCall, median } from './support.mjs'

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7)
const MS = Number(process.env.BENCH_MS ?? 300)

const values = {
  http_response: {
    status: 201,
    headers: [
      ['content-type', 'application/json'],
      ['location', '/orders/ord_01HZX3K9Q2'],
    ],
    body: Buffer.from(JSON.stringify({ id: 'ord_01HZX3K9Q2', status: 'created', total: 123.45 })).toString('base64'),
  },
  order: {
    orderId: 'ord_01HZX3K9Q2',
    createdAt: new Date(0),
    customer: { id: 'cus_12345', email: 'jane.doe@example.com', name: 'Jane Doe' },
    items: Array.from({ length: 5 }, (_, k) => ({ sku: `SKU-${1000 + k}`, quantity: k + 1, unitPrice: 19.99 + k })),
    paid: false,
    total: 123.45,
  },
}

/** Nanoseconds of CPU per call of `op`, which must serialise something. */
const timed = (op) => cpuNanosPerCall(op, MS, (result) => result.length > 0)

// Each round times both back to back, in alternating order; the median ratio counts.
const ratios = Object.fromEntries(Object.keys(values).map((name) => [name, []]))
for (const value of Object.values(values)) timed(() => serializeOutcome(value)) // warm up
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, value] of Object.entries(values)) {
    let ours, plain
    if (round % 2 === 0) {
      ours = timed(() => serializeOutcome(value))
      plain = timed(() => JSON.stringify(value))
    } else {
      plain = timed(() => JSON.stringify(value))
      ours = timed(() => serializeOutcome(value))
    }
    ratios[name].push(ours / plain)
  }
}
for (const name of Object.keys(values)) console.log(`RATIO outcome.${name}_vs_json_stringify ${median(ratios[name]).toFixed(2)}`)
