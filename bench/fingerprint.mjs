// bench:fingerprint: what the request fingerprint costs next to one SHA-256 of the same
// bytes, on the request path's own call (`hashRequest`, with the body as the bytes the
// handler reads). `RATIO fingerprint.json_1kb_vs_sha256` is the target line: a compact 1 KB
// JSON body whose keys are already in canonical order. The others are information: the
// same body as `JSON.stringify` writes it (keys in the order the code built them), pretty
// printed, a 64 KB body, and `fingerprintValue` (an engine call's `input`, memo's input)
// of the 1 KB order as a value, against SHA-256 of its canonical text.
import { isUtf8 } from 'node:buffer'
import { hash } from 'node:crypto'
import canonicalize from 'canonicalize'
import { fingerprintValue } from '../dist/core/json-data.js'
import { hashRequest } from '../dist/http/request-fingerprint.js'
import { cpuNanosPerCall, median } from './support.mjs'

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7)
const MS = Number(process.env.BENCH_MS ?? 300)

/** An order as a client would send it: nested objects, an array of items, text, numbers. */
function order(items) {
  return {
    orderId: 'ord_01HZX3K9Q2',
    customer: { id: 'cus_12345', email: 'jane.doe@example.com', name: 'Jane Doe', tier: 'gold' },
    currency: 'EUR',
    items: Array.from({ length: items }, (_, k) => ({ sku: `SKU-${1000 + k}-ABC`, quantity: (k % 4) + 1, unitPrice: 19.99 + k, title: `Product number ${k}` })),
    shipping: { street: '12 Example Street', city: 'Berlin', postcode: '10115', country: 'DE', express: false },
    note: 'Please leave the parcel at the door',
    total: 123.45,
  }
}

/** The number of items that makes the compact body closest to `bytes`. */
function sized(bytes) {
  let items = 1
  while (canonicalize(order(items + 1)).length <= bytes) items++
  return order(items)
}

const utf8 = (text) => new Uint8Array(Buffer.from(text, 'utf8'))
const small = sized(1024)
const large = sized(64 * 1024)
const bodies = {
  json_1kb: utf8(canonicalize(small)),
  json_1kb_unsorted: utf8(JSON.stringify(small)),
  json_1kb_pretty: utf8(JSON.stringify(small, null, 2)),
  json_64kb: utf8(canonicalize(large)),
  value_1kb: utf8(canonicalize(small)),
}
// The body that stands for the value: its fingerprint is `fingerprintValue(small)`.
const VALUE = bodies.value_1kb

// The floor of any fingerprint that keeps canonical equality for JSON: it must read every
// byte in JavaScript at least once (here one table lookup per byte, no structure at all),
// check the bytes are UTF-8, and hash them joined to the request's head. Information:
// what the target line could reach with a free structure check.
const PLAIN = new Uint8Array(256).fill(1, 0x20)
PLAIN[0x22] = 0
PLAIN[0x5c] = 0
function everyByte(bytes) {
  let plain = 0
  for (let i = 0; i < bytes.length; i++) plain += PLAIN[bytes[i]]
  return plain
}
const floor = (body) => () => {
  if (!isUtf8(body) || everyByte(body) < 0) return ''
  const head = `idem-fingerprint-v1 POST /orders ${body.byteLength}:`
  const joined = Buffer.allocUnsafe(head.length + body.byteLength)
  joined.write(head, 0, 'latin1')
  joined.set(body, head.length)
  return hash('sha256', joined, 'hex')
}

const fingerprint = (body) => (body === VALUE ? () => fingerprintValue(small) : () => hashRequest({ method: 'POST', route: '/orders', query: '', body, contentType: 'application/json', fields: undefined }))
const sha256 = (body) => () => hash('sha256', body, 'hex')

/** Nanoseconds of CPU per call of `op`, whose every result must be a SHA-256 in hex. */
const timed = (op) => cpuNanosPerCall(op, MS, (result) => result.length === 64)

// Every round times the fingerprint and the SHA-256 of the same bytes back to back, in
// alternating order, so the ratio of the pair sees the same load; the median ratio counts.
const ratios = Object.fromEntries(Object.keys(bodies).map((name) => [name, []]))
const nanos = Object.fromEntries(Object.keys(bodies).map((name) => [name, { fingerprint: [], sha256: [] }]))
for (const body of Object.values(bodies)) timed(fingerprint(body)) // warm up
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, body] of Object.entries(bodies)) {
    let ours, theirs
    if (round % 2 === 0) {
      ours = timed(fingerprint(body))
      theirs = timed(sha256(body))
    } else {
      theirs = timed(sha256(body))
      ours = timed(fingerprint(body))
    }
    nanos[name].fingerprint.push(ours)
    nanos[name].sha256.push(theirs)
    ratios[name].push(ours / theirs)
  }
}
for (const [name, body] of Object.entries(bodies)) {
  const spread = `${Math.min(...ratios[name]).toFixed(2)}–${Math.max(...ratios[name]).toFixed(2)}`
  console.log(
    `${name}: ${body.byteLength} bytes, fingerprint ${(median(nanos[name].fingerprint) / 1000).toFixed(2)} µs, ` +
      `SHA-256 ${(median(nanos[name].sha256) / 1000).toFixed(2)} µs (ratio per round ${spread})`,
  )
}
for (const name of Object.keys(bodies)) console.log(`RATIO fingerprint.${name}_vs_sha256 ${median(ratios[name]).toFixed(2)}`)

// The floor, on the target line's body, against SHA-256 the same way.
const floorRatios = []
for (let round = 0; round < ROUNDS; round++) {
  const body = bodies.json_1kb
  const [ours, theirs] = round % 2 === 0 ? [timed(floor(body)), timed(sha256(body))] : [timed(sha256(body)), timed(floor(body))].reverse()
  floorRatios.push(ours / theirs)
}
console.log(`json_1kb floor (UTF-8 check, one JavaScript read of each byte, joined and hashed): ${median(floorRatios).toFixed(2)}× SHA-256`)
console.log(`RATIO fingerprint.json_1kb_floor_vs_sha256 ${median(floorRatios).toFixed(2)}`)
