// Splits a V8 CPU profile (node --cpu-prof) of one bench:peers server into the parts of a
// request: the framework, idem's adapter (http/), engine (core/) and store code (stores/),
// the database and Redis clients, Node's HTTP and sockets, the peer library, the garbage
// collector. A native frame (no script of its own: a socket write, a hash) counts for the
// part of the script that called it. `PEERS_PROFILE=<dir>` makes bench:peers write one
// profile per server and print this split per fresh request.
import { readFileSync } from 'node:fs'

// idem's own files: dist/ of this repository, not of a package in node_modules.
const IDEM = [
  [/\/dist\/(http|headers)\//, 'idem adapter'],
  [/\/dist\/core\//, 'idem engine'],
  [/\/dist\/stores\//, 'idem store'],
  [/\/dist\//, 'idem other'],
]
const PARTS = [
  [/node_modules\/(ioredis|@ioredis|redis|@redis|redis-parser|cluster-key-slot|denque|standard-as-callback)\//, 'redis client'],
  [/node_modules\/(pg|pg-[a-z-]+|pgpass|postgres-[a-z-]+)\//, 'postgres client'],
  [/node_modules\/(@node-idempotency|express-idempotency|express-idempotency-redis-adapter|@aws-lambda-powertools|@nestjs|rxjs)\//, 'peer library'],
  [/node_modules\/(express4|express5|express|hono|@hono|body-parser|router|raw-body|finalhandler|send|qs|type-is|content-type|iconv-lite|on-finished|debug|depd|mime-types|negotiator|accepts|statuses|http-errors|serve-static|path-to-regexp|etag|fresh|cookie|vary|proxy-addr|parseurl|encodeurl|escape-html|media-typer|bytes|unpipe|ee-first|destroy|merge-descriptors|utils-merge|methods|safe-buffer|setprototypeof|toidentifier|forwarded|ipaddr\.js|range-parser|mime|array-flatten|cookie-signature|content-disposition|side-channel|object-inspect|get-intrinsic|call-bind|es-errors|function-bind|has-symbols|hasown|gopd|dunder-proto|math-intrinsics|es-object-atoms|get-proto|call-bound|side-channel-[a-z]+|call-bind-apply-helpers|es-define-property)\//, 'framework'],
  [/bench\/peers\/server\.mjs/, 'route (bench)'],
  [/^node:internal\/(http|_http|streams|stream_base|net|dns|tls)|^node:(http|net|_http_[a-z]+)|node:internal\/(stream_base_commons|streams)/, 'node http and sockets'],
  [/^node:/, 'node other'],
]

function partOf(url) {
  if (!url.includes('/node_modules/')) for (const [pattern, name] of IDEM) if (pattern.test(url)) return name
  for (const [pattern, name] of PARTS) if (pattern.test(url)) return name
  return url === '' ? undefined : 'other scripts'
}

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
