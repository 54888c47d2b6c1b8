// Splits a V8 CPU profile of one bench:peers server into the parts of a request: idem's
// own JavaScript (the repository's dist/: its adapter, engine, store and other code), the
// peer library's own JavaScript, the Redis and Postgres clients, the framework, Node's
// HTTP and sockets, the bench's route, the garbage collector. A frame is counted where its
// code lives; a native frame (no script of its own: a socket write, a hash) and a frame of
// a helper package no part claims (call-bind, debug, canonicalize…) count for the part of
// the code that called them, so a helper shared by a framework and a library is counted
// for whichever of them called it. `PEERS_PROFILE=<dir>` makes bench:peers profile each
// server over its measured runs and print this split per fresh request.
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const DIST = `file://${fileURLToPath(new URL('../../dist/', import.meta.url))}`
const BENCH = `file://${fileURLToPath(new URL('../', import.meta.url))}`

/** idem's parts, by folder of dist/; their sum is idem's own JavaScript. */
const IDEM = [
  [/^(http|headers)\//, 'idem adapter'],
  [/^core\//, 'idem engine'],
  [/^stores\//, 'idem store'],
  [/./, 'idem other'],
]
/** The parts of the packages in node_modules, by package name; a package not listed is a helper. */
const PACKAGES = [
  [/^(ioredis|@ioredis\/.*|redis|@redis\/.*|redis-parser|redis-errors|cluster-key-slot|denque|standard-as-callback|generic-pool)$/, 'redis client'],
  [/^(pg|pg-[a-z0-9-]+|pgpass|postgres-[a-z-]+|split2)$/, 'postgres client'],
  [
    /^(@node-idempotency\/.*|express-idempotency|express-idempotency-redis-adapter|deep-equal|autobind-decorator|http-status-codes|@aws-lambda-powertools\/.*|@aws\/lambda-invoke-store|@nestjs\/.*|rxjs|reflect-metadata)$/,
    'peer library',
  ],
  [
    /^(express4|express5|express|body-parser|router|raw-body|finalhandler|send|serve-static|qs|type-is|content-type|iconv-lite|on-finished|on-headers|mime-types|mime-db|mime|negotiator|accepts|statuses|http-errors|path-to-regexp|etag|fresh|cookie|cookie-signature|vary|proxy-addr|forwarded|ipaddr\.js|parseurl|encodeurl|escape-html|media-typer|bytes|unpipe|ee-first|destroy|merge-descriptors|utils-merge|methods|range-parser|array-flatten|content-disposition|setprototypeof|toidentifier)$/,
    'framework',
  ],
  [/^(hono|@hono\/.*)$/, 'framework'],
  [
    /^(fastify|@fastify\/.*|find-my-way|avvio|light-my-request|fast-json-stringify|secure-json-parse|pino|pino-[a-z-]+|@pinojs\/.*|abstract-logging|process-warning|rfdc|fast-querystring|fast-decode-uri-component|toad-cache|fastq|reusify|ret|safe-regex2|json-schema-ref-resolver|fast-uri|ajv|thread-stream|sonic-boom|on-exit-leak-free|atomic-sleep|quick-format-unescaped|real-require|safe-stable-stringify|fast-redact|dequal|semver)$/,
    'framework',
  ],
]
const NODE = [
  [/^node:internal\/(http|_http|streams|stream_base|net|dns|tls|stream_base_commons)|^node:(http|net|_http_[a-z]+)/, 'node http and sockets'],
  [/^node:/, 'node other'],
]

/** The part of the code at `url`, or undefined when it is counted for its caller. */
function partOf(url) {
  if (url === '') return undefined
  const packages = [...url.matchAll(/\/node_modules\/((?:@[^/]+\/)?[^/]+)\//g)]
  if (packages.length > 0) {
    const name = packages.at(-1)[1]
    return PACKAGES.find(([pattern]) => pattern.test(name))?.[1]
  }
  if (url.startsWith(DIST)) return IDEM.find(([pattern]) => pattern.test(url.slice(DIST.length)))[1]
  if (url.startsWith(`${BENCH}hand-written.mjs`)) return 'hand-written key row'
  if (url.startsWith(BENCH)) return 'route (bench)'
  return NODE.find(([pattern]) => pattern.test(url))?.[1] ?? 'other scripts'
}

/** Whether a part is idem's own JavaScript. */
export const isIdem = (part) => part.startsWith('idem ')

/** Microseconds of CPU by part, over the whole profile (idle left out). */
export function splitProfile(file) {
  const profile = JSON.parse(readFileSync(file, 'utf8'))
  const byId = new Map(profile.nodes.map((node) => [node.id, node]))
  const parent = new Map()
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id)
  const cache = new Map()
  const bucket = (id) => {
    if (cache.has(id)) return cache.get(id)
    const node = byId.get(id)
    const name = node.callFrame.functionName
    let part
    if (name === '(garbage collector)') part = 'gc'
    else if (name === '(idle)') part = 'idle'
    else if (name === '(program)' || name === '(root)') part = 'program (V8, native)'
    else part = partOf(node.callFrame.url) ?? (parent.has(id) ? bucket(parent.get(id)) : 'program (V8, native)')
    cache.set(id, part)
    return part
  }
  const micros = new Map()
  for (let i = 0; i < profile.samples.length; i++) {
    const part = bucket(profile.samples[i])
    micros.set(part, (micros.get(part) ?? 0) + (profile.timeDeltas[i] ?? 0))
  }
  micros.delete('idle')
  return micros
}

// `node bench/peers/profile-split.mjs FILE…`: each profile's split in per cent.
if (import.meta.url === `file://${process.argv[1]}`) {
  for (const file of process.argv.slice(2)) {
    const micros = splitProfile(file)
    const total = [...micros.values()].reduce((sum, value) => sum + value, 0)
    const parts = [...micros].sort((a, b) => b[1] - a[1]).map(([part, value]) => `${part} ${((100 * value) / total).toFixed(1)}%`)
    console.log(`${file}: ${(total / 1e6).toFixed(2)} s (${parts.join(', ')})`)
  }
}
