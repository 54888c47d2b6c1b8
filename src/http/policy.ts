import { CHECKED_RUN } from '../core/call.js'
import { InFlightError } from '../core/errors/in-flight.js'
import { LeaseLostError } from '../core/errors/lease-lost.js'
import { OverranError } from '../core/errors/overran.js'
import { StoreUnavailableError } from '../core/errors/store-unavailable.js'
import { MAX_KEY_LENGTH } from '../core/identity.js'
import { assertKnownOptions, optionNames } from '../core/validate.js'
import { SHARED_SCOPE, type HttpEngine, type IdempotencyOptions } from './options.js'
import { PROBLEMS, problemType, type ProblemCode } from './problem.js'
import { resolveOptions } from './resolved-options.js'
import { BODY_OMITTED_HEADER, REPLAYED_HEADER } from './stored-response.js'

/** How `idempotencyPolicy` renders the page. */
export interface PolicyFormat {
  /** Markdown, a standalone HTML page (or a fragment, see `fragment`), or the policy as JSON data. */
  format: 'md' | 'html' | 'json'
  /** The page's heading. @default 'Idempotent requests' */
  title?: string
  /** The level of the page's heading (its sections are one below), to fit the page into larger docs. @default 1 */
  headingLevel?: 1 | 2 | 3 | 4 | 5
  /**
   * The paths the middleware protects, when the framework's router decides that (the
   * middleware mounted on some routes only) and the options cannot say.
   * @default the `routes` option's list, or every endpoint
   */
  paths?: readonly string[]
  /** HTML only: the content without `<html>`, `<head>` and `<body>`, to embed in a page. @default false */
  fragment?: boolean
}

/** One problem a client can receive, as the policy states it. */
export interface PolicyError {
  readonly code: ProblemCode
  readonly status: number
  readonly title: string
  /** The RFC 9457 `type` URI the answer carries (after `problemTypes`). */
  readonly type: string
  /** When it is answered. */
  readonly when: string
  /** What a client should do. */
  readonly retry: string
  /** The `Retry-After` seconds it carries, if any. */
  readonly retryAfterSeconds?: number
}

/**
 * The policy as data: what the middleware does with the options it was given, every
 * default applied. `format: 'json'` renders exactly this.
 */
export interface IdempotencyPolicyDocument {
  /** The version of this document's shape. */
  readonly policyVersion: 1
  readonly header: 'Idempotency-Key'
  /** Methods that take a key, upper case. */
  readonly methods: readonly string[]
  /** The protected paths, or `'all'`, or `'selected'` when a predicate decides. */
  readonly paths: readonly string[] | 'all' | 'selected'
  /** True when a protected request without a key is refused (400); false when it is processed unprotected. */
  readonly required: boolean
  readonly key: {
    readonly syntax: 'RFC 9651 sf-string'
    readonly bareAccepted: boolean
    readonly minLength: 1
    readonly maxLength: number
    readonly characters: 'visible ASCII (0x21-0x7E)'
  }
  /** `per-client`: keys are kept per authenticated principal; `shared`: one key space for every client. */
  readonly scope: 'per-client' | 'shared'
  readonly fingerprint: {
    readonly method: true
    readonly path: true
    readonly query: 'sorted pairs'
    /** `'whole'`, or the body fields compared (dot paths). */
    readonly body: 'whole' | readonly string[]
    readonly maxBodyBytes: number
  }
  /** How long a stored response is replayed, in milliseconds; then the key is new. */
  readonly retentionMs: number
  /** How long a request may be processed, in milliseconds; one still running then is given up on (503 `overran`). */
  readonly deadlineMs: number
  readonly stored: {
    /** The statuses (200–599) whose responses are stored, as inclusive ranges. */
    readonly statuses: ReadonlyArray<readonly [number, number]>
    /** The same, in words (`2xx, 3xx and 4xx except 408, 425 and 429`). */
    readonly summary: string
    /** The statuses not stored, in words. */
    readonly notStored: string
  }
  readonly replay: {
    /** Response headers kept for replays, lower case. */
    readonly headers: readonly string[]
    /** The header every replay carries. */
    readonly marker: { readonly name: string; readonly value: 'true' }
    /** Response bodies larger than this are stored without their body. */
    readonly maxStoredBodyBytes: number
    /** The header a replay of such a response carries, with an empty body. */
    readonly bodyOmittedMarker: { readonly name: string; readonly value: 'true' }
  }
  readonly concurrent: {
    /** How long a duplicate waits for the first request before 409, in milliseconds. */
    readonly waitMs: number
    readonly status: number
    readonly retryAfterSeconds: number | undefined
    /** What a different request under a running key gets: 422 at once (leased), 409 until the first finishes (transactional), or not known. */
    readonly mismatchWhileRunning: 'immediate' | 'after-first-finishes' | 'unknown'
  }
  readonly errors: readonly PolicyError[]
}

const FORMAT_OPTIONS = optionNames<PolicyFormat>({ format: true, title: true, headingLevel: true, paths: true, fragment: true })

/**
 * Renders an "Idempotency" page for your own API docs from the middleware options you
 * serve with: the header's syntax, which methods and paths take a key, whether it is
 * required, how long responses are kept, what is replayed, whether keys are per client,
 * and every problem a client can get, with its `type` URI (after `problemTypes`) and
 * what to do about it (409: wait `Retry-After` and retry with the same key; 422: a new
 * request needs a new key). The options are resolved exactly as `idempotency()`
 * resolves them, so the page says what the middleware does. A store is not needed:
 * without `store` or `idem` the page describes the HTTP contract alone.
 *
 * @param options the options given to `idempotency()` (any adapter)
 * @param format `md`, `html` or `json`, and the page's title, heading level and paths
 * @returns the page (JSON: the `IdempotencyPolicyDocument`, indented)
 * @throws InvalidOptionError as `idempotency()` would, for the same options
 * @see docs/policy.md
 *
 * @example
 * import { idempotencyPolicy } from 'idem/fetch'
 * const options = { store, scope, ttlMs: 6 * 3600_000, problemTypes: 'https://docs.example.com/errors' }
 * app.use('/payments/*', idempotency(options))
 * await writeFile('docs/idempotency.md', idempotencyPolicy(options, { format: 'md' }))
 */
export function idempotencyPolicy<Tx, Native>(options: IdempotencyOptions<Tx, Native>, format: PolicyFormat): string {
  assertKnownOptions('idempotencyPolicy', format, FORMAT_OPTIONS)
  if (!['md', 'html', 'json'].includes(format.format)) {
    throw new TypeError('idempotencyPolicy: the second argument must be { format: "md" | "html" | "json" }')
  }
  const document = describePolicy(options, format.paths)
  if (format.format === 'json') return `${JSON.stringify(document, null, 2)}\n`
  const blocks = policyBlocks(document, format.title ?? 'Idempotent requests', format.headingLevel ?? 1)
  return format.format === 'md' ? markdown(blocks) : html(blocks, format.title ?? 'Idempotent requests', format.fragment === true)
}

// Stands in for the engine when the options name none: the policy runs nothing.
const nothingRuns = (): Promise<never> => Promise.reject(new Error('idempotencyPolicy: this engine only describes options; it runs nothing'))
const POLICY_ONLY: HttpEngine<never> = {
  run: nothingRuns,
  [CHECKED_RUN]: nothingRuns,
  // No store to size stored responses by: the options' own maxStoredBodyBytes (or its default) stands.
  store: { name: 'none', maxOutcomeBytes: Number.MAX_SAFE_INTEGER },
}

/** The policy as data (what `format: 'json'` renders): the one source of the page, the CLI and the OpenAPI description. */
export function describePolicy<Tx, Native>(options: IdempotencyOptions<Tx, Native>, paths: readonly string[] | undefined): IdempotencyPolicyDocument {
  // Not an object: the middleware's own refusal, word for word.
  if (options === null || typeof options !== 'object') resolveOptions(options)
  const given = options
  const withEngine = given.store === undefined && given.idem === undefined ? { ...given, idem: POLICY_ONLY as HttpEngine<Tx> } : given
  // A missing scope is stated in the page; the start-up warning is for servers, not for docs.
  const o = resolveOptions({ ...withEngine, scope: given.scope ?? (() => SHARED_SCOPE) })
  const mode = engineMode(o.idem)
  const stored = storedStatuses(o.storeStatus)
  const retryAfter = (error: { retryAfterSeconds: number | undefined }): number | undefined => error.retryAfterSeconds
  const inFlightRetry = retryAfter(new InFlightError(''))
  const methods = [...o.methods]
  const errors: PolicyError[] = []
  const add = (code: ProblemCode, when: string, retry: string, retryAfterSeconds?: number): void => {
    const { status, title } = PROBLEMS[code]
    errors.push({ code, status, title, type: problemType(code, o.problemTypes), when, retry, ...(retryAfterSeconds === undefined ? {} : { retryAfterSeconds }) })
  }
  if (o.required) add('missing-key', `a ${list(methods.map(code), 'or')} request without \`Idempotency-Key\``, 'add the header (a new key) and send it again')
  add('invalid-key', 'the header is not one valid key (see above), or it was sent twice', 'fix the key; nothing was processed')
  add('body-too-large', `the body is larger than ${bytes(o.maxBodyBytes)}`, 'send a smaller body; nothing was processed')
  add(
    'fingerprint-mismatch',
    'the key was first used with a different request (method, path, query or body)',
    'do not retry: a new request needs a new key',
  )
  add('in-flight', 'the first request with this key is still being processed', 'wait `Retry-After` seconds, then retry with the same key', inFlightRetry)
  if (mode !== 'transactional') {
    add(
      'lease-lost',
      'another attempt with this key took its work over while this one stalled',
      'wait `Retry-After` seconds, then retry with the same key to get its response',
      retryAfter(new LeaseLostError('')),
    )
  }
  add(
    'overran',
    `the request was still being processed ${duration(o.deadlineMs)} after it started: the server gave up on it and stored nothing for its key`,
    'wait `Retry-After` seconds, then retry with the same key: it is processed afresh',
    retryAfter(new OverranError('')),
  )
  add(
    'store-unavailable',
    'the server cannot reach its idempotency store (before processing the request, or while storing its response)',
    'wait `Retry-After` seconds, then retry with the same key',
    retryAfter(new StoreUnavailableError('')),
  )
  add(
    'outcome-unreadable',
    'the response stored for this key cannot be read back; nothing was replayed or processed again',
    "report it: retrying with the same key does not help until the server's operator repairs the stored response",
  )
  add('migration-required', 'the server is not set up for idempotency; nothing was processed', 'retry later with the same key')
  add('invalid-option', 'the server is misconfigured; nothing was processed', 'retry later with the same key')

  const raw = given.routes
  return {
    policyVersion: 1,
    header: 'Idempotency-Key',
    methods,
    paths: paths !== undefined ? [...paths] : raw === undefined ? 'all' : typeof raw === 'function' ? 'selected' : raw.map((r) => (r instanceof RegExp ? String(r) : r)),
    required: o.required,
    key: { syntax: 'RFC 9651 sf-string', bareAccepted: !o.strict, minLength: 1, maxLength: MAX_KEY_LENGTH, characters: 'visible ASCII (0x21-0x7E)' },
    scope: given.scope === undefined ? 'shared' : 'per-client',
    fingerprint: { method: true, path: true, query: 'sorted pairs', body: o.fields === undefined ? 'whole' : [...o.fields], maxBodyBytes: o.maxBodyBytes },
    // Both engines keep DEFAULT_TTL_MS when nobody set a ttlMs; resolveOptions has applied every explicit one.
    retentionMs: o.ttlMs,
    deadlineMs: o.deadlineMs,
    stored,
    replay: {
      headers: [...o.replayHeaders],
      marker: { name: headerCase(REPLAYED_HEADER), value: 'true' },
      maxStoredBodyBytes: o.maxStoredBodyBytes,
      bodyOmittedMarker: { name: headerCase(BODY_OMITTED_HEADER), value: 'true' },
    },
    concurrent: {
      waitMs: o.waitMs,
      status: PROBLEMS['in-flight'].status,
      retryAfterSeconds: inFlightRetry,
      mismatchWhileRunning: mode === 'leased' ? 'immediate' : mode === 'transactional' ? 'after-first-finishes' : 'unknown',
    },
    errors,
  }
}

/** Which engine the middleware runs on, told by its store's shape (the ports differ). */
function engineMode(engine: HttpEngine<unknown>): 'transactional' | 'leased' | 'unknown' {
  const store = (engine as { store?: { claim?: unknown; begin?: unknown } }).store
  if (typeof store?.claim === 'function') return 'leased'
  if (typeof store?.begin === 'function') return 'transactional'
  return 'unknown'
}

/** Asks `storeStatus` about every final status, so the page states what it decides, whatever it is. */
function storedStatuses(storeStatus: (status: number) => boolean): IdempotencyPolicyDocument['stored'] {
  const ranges: Array<[number, number]> = []
  const phrases: string[] = []
  const refused: string[] = []
  for (let hundred = 200; hundred < 600; hundred += 100) {
    const kept: number[] = []
    const dropped: number[] = []
    for (let status = hundred; status < hundred + 100; status++) {
      if (storeStatus(status)) {
        kept.push(status)
        const last = ranges[ranges.length - 1]
        if (last !== undefined && last[1] === status - 1) last[1] = status
        else ranges.push([status, status])
      } else dropped.push(status)
    }
    const family = `${hundred / 100}xx`
    if (dropped.length === 0) phrases.push(family)
    else if (kept.length === 0) refused.push(family)
    else if (dropped.length <= kept.length) {
      phrases.push(`${family} except ${list(dropped.map(String))}`)
      refused.push(...dropped.map(String))
    } else {
      phrases.push(...kept.map(String))
      refused.push(`${family} except ${list(kept.map(String))}`)
    }
  }
  return { statuses: ranges, summary: phrases.length === 0 ? 'none' : list(phrases), notStored: refused.length === 0 ? 'none' : list(refused) }
}

// The page as blocks, so that Markdown and HTML say the same thing in the same words.
// Text uses two inline marks only: `code` and [label](url).
type Block =
  | { kind: 'heading'; level: number; text: string }
  | { kind: 'paragraph'; text: string }
  | { kind: 'list'; items: string[] }
  | { kind: 'table'; head: string[]; rows: string[][] }

function policyBlocks(doc: IdempotencyPolicyDocument, title: string, level: number): Block[] {
  const section = (text: string): Block => ({ kind: 'heading', level: Math.min(level + 1, 6), text })
  const methods = list(doc.methods.map(code))
  const retention = duration(doc.retentionMs)
  const where =
    doc.paths === 'all'
      ? `${methods} requests`
      : doc.paths === 'selected'
        ? `${methods} requests to the endpoints that say so`
        : `${methods} requests to ${list(doc.paths.map(code))}`
  const mismatch = doc.errors.find((e) => e.code === 'fingerprint-mismatch')!
  const inFlight = doc.errors.find((e) => e.code === 'in-flight')!
  const overran = doc.errors.find((e) => e.code === 'overran')!
  const ref = (e: PolicyError): string => `\`${e.status}\` ([\`${e.code}\`](${e.type}))`
  const blocks: Block[] = [
    { kind: 'heading', level, text: title },
    {
      kind: 'paragraph',
      text:
        `This API accepts an \`Idempotency-Key\` header on ${where}, so that a request can be retried safely: ` +
        'however often it is sent with the same key, it takes effect once, and every retry gets the response of the first.',
    },
    section('Sending a key'),
  ]
  const missing = doc.errors.find((e) => e.code === 'missing-key')
  const invalid = doc.errors.find((e) => e.code === 'invalid-key')!
  const keyItems = [
    missing !== undefined
      ? `Send \`Idempotency-Key\` with every ${methods} request${doc.paths === 'all' ? '' : ' to these endpoints'}. A request without it is refused with ${ref(missing)}.`
      : `Send \`Idempotency-Key\` with every ${methods} request you may retry. A request without it is processed without this protection: if you retry it, it may take effect twice.`,
    `The value is a quoted string (an RFC 9651 sf-string): \`Idempotency-Key: "8e03978e-40d5-43e8-bc93-6894a57f9324"\`.` +
      (doc.key.bareAccepted ? ' A bare value without quotes is accepted too: `Idempotency-Key: 8e03978e-40d5-43e8-bc93-6894a57f9324`.' : ' Bare values without quotes are refused.'),
    `A key is ${doc.key.minLength} to ${doc.key.maxLength} characters of visible ASCII (\`!\` to \`~\`, no spaces); inside the quotes write \`"\` as \`\\"\` and \`\\\` as \`\\\\\`.` +
      (doc.key.bareAccepted ? ' A bare key may not contain `"`, `,`, `;` or `\\`.' : '') +
      ` Anything else, or the header sent twice, is refused with ${ref(invalid)}.`,
    'Mint one key per operation before its first attempt (a random UUID, v4 or v7) and send the same key on every retry of that operation. A new operation needs a new key.',
    doc.scope === 'per-client'
      ? 'Keys belong to the client that sends them (the credentials it authenticates with): another client using the same key never sees your responses, nor you theirs.'
      : 'Keys are not kept per client: every client shares one key space, so use keys nobody else could pick (random UUIDs), never ids such as order numbers.',
  ]
  blocks.push({ kind: 'list', items: keyItems })

  blocks.push(section('What counts as the same request'))
  const tooLarge = doc.errors.find((e) => e.code === 'body-too-large')!
  blocks.push({
    kind: 'paragraph',
    text:
      'The first request sent with a key is remembered with a fingerprint of its method, its path, its query parameters (in any order, though the values of a repeated parameter keep theirs) and ' +
      (doc.fingerprint.body === 'whole'
        ? 'its body. JSON bodies are compared canonically, so key order and whitespace do not matter; form bodies as fields in any order (the values of a repeated field in theirs); multipart bodies by their parts, whatever boundary separates them; other bodies byte for byte.'
        : `these fields of its JSON or form body: ${list(doc.fingerprint.body.map(code))}. Other fields do not count.`) +
      ` A retry must send the same request: the same key with a different request is refused with ${ref(mismatch)}. ` +
      `Bodies larger than ${bytes(doc.fingerprint.maxBodyBytes)} are refused with ${ref(tooLarge)}.`,
  })

  blocks.push(section('What is stored and replayed'))
  const headers = doc.replay.headers.map((h) => code(headerCase(h)))
  blocks.push({
    kind: 'list',
    items: [
      `Responses with status ${doc.stored.summary} are stored for ${retention}. A retry with the same key within that time gets the stored response back and the request is not processed again: ` +
        `the same status, the same body, ${headers.length === 0 ? 'no headers of the original' : `the headers ${list(headers)}`}, and \`${doc.replay.marker.name}: ${doc.replay.marker.value}\`. Other headers of the first response are not replayed.`,
      `A response whose body is larger than ${bytes(doc.replay.maxStoredBodyBytes)} is stored without its body: a retry gets its status and headers (not those describing the body), an empty body and \`${doc.replay.bodyOmittedMarker.name}: ${doc.replay.bodyOmittedMarker.value}\`, and the request is not processed again.`,
      `Responses with status ${doc.stored.notStored} are not stored: a retry with the same key is processed again.`,
      `After ${retention} a key is forgotten, and a request with it is processed as a new one: retry an operation within ${retention} of its first attempt.`,
    ],
  })

  blocks.push(section('While the first request is still running'))
  const retryAfter = inFlight.retryAfterSeconds === undefined ? '' : ` with \`Retry-After: ${inFlight.retryAfterSeconds}\``
  const wait =
    doc.concurrent.waitMs === 0
      ? `A retry that arrives while the first request with its key is still being processed is answered at once with ${ref(inFlight)}${retryAfter}.`
      : `A retry that arrives while the first request with its key is still being processed waits up to ${duration(doc.concurrent.waitMs)} for it and then gets its response. If the first is still running by then, the retry is answered with ${ref(inFlight)}${retryAfter}.`
  blocks.push({
    kind: 'paragraph',
    text:
      `${wait} Nothing was processed: wait that long and retry with the same key. You get the first request's response, or, if the first failed, your retry is processed.` +
      (doc.concurrent.mismatchWhileRunning === 'immediate'
        ? ` A different request under a running key is refused with ${ref(mismatch)} at once.`
        : doc.concurrent.mismatchWhileRunning === 'after-first-finishes'
          ? ` A different request under a running key also gets ${code(String(inFlight.status))} until the first has finished, and ${code(String(mismatch.status))} after.`
          : '') +
      ` A request still being processed ${duration(doc.deadlineMs)} after it started is given up on and answered with ${ref(overran)}${overran.retryAfterSeconds === undefined ? '' : ` with \`Retry-After: ${overran.retryAfterSeconds}\``}: nothing is stored for its key, and a retry with the same key is processed afresh.`,
  })

  blocks.push(section('Errors'))
  blocks.push({
    kind: 'paragraph',
    text:
      'Errors are `application/problem+json` (RFC 9457) with a stable `type` URI and `code`. None of them means that a request took effect twice: do what the last column says.',
  })
  blocks.push({
    kind: 'table',
    head: ['status', 'type', 'when', 'what to do'],
    rows: doc.errors.map((e) => [code(String(e.status)), `[\`${e.code}\`](${e.type})`, e.when, e.retry]),
  })
  return blocks
}

function markdown(blocks: Block[]): string {
  const out: string[] = []
  for (const block of blocks) {
    if (block.kind === 'heading') out.push(`${'#'.repeat(block.level)} ${block.text}`)
    else if (block.kind === 'paragraph') out.push(block.text)
    else if (block.kind === 'list') out.push(block.items.map((item) => `- ${item}`).join('\n'))
    else {
      const row = (cells: string[]): string => `| ${cells.map((c) => c.replace(/\|/g, '\\|')).join(' | ')} |`
      out.push([row(block.head), row(block.head.map(() => '---')), ...block.rows.map(row)].join('\n'))
    }
  }
  return `${out.join('\n\n')}\n`
}

function html(blocks: Block[], title: string, fragment: boolean): string {
  const out: string[] = []
  for (const block of blocks) {
    if (block.kind === 'heading') out.push(`<h${block.level}>${inline(block.text)}</h${block.level}>`)
    else if (block.kind === 'paragraph') out.push(`<p>${inline(block.text)}</p>`)
    else if (block.kind === 'list') out.push(`<ul>\n${block.items.map((item) => `  <li>${inline(item)}</li>`).join('\n')}\n</ul>`)
    else {
      const head = block.head.map((c) => `<th>${inline(c)}</th>`).join('')
      const rows = block.rows.map((cells) => `    <tr>${cells.map((c) => `<td>${inline(c)}</td>`).join('')}</tr>`).join('\n')
      out.push(`<table>\n  <thead><tr>${head}</tr></thead>\n  <tbody>\n${rows}\n  </tbody>\n</table>`)
    }
  }
  const body = out.join('\n')
  if (fragment) return `${body}\n`
  return `<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>${escape(title)}</title>\n</head>\n<body>\n${body}\n</body>\n</html>\n`
}

/** The two inline marks as HTML: `code` spans and [label](url) links; everything else escaped. */
function inline(text: string): string {
  let out = ''
  const mark = /`([^`]*)`|\[((?:`[^`]*`|[^\]])*)\]\(([^)\s]+)\)/g
  let at = 0
  for (const match of text.matchAll(mark)) {
    out += escape(text.slice(at, match.index))
    if (match[1] !== undefined) out += `<code>${escape(match[1])}</code>`
    else out += `<a href="${escape(match[3]!)}">${inline(match[2]!)}</a>`
    at = match.index + match[0].length
  }
  return out + escape(text.slice(at))
}

function escape(text: string): string {
  return text.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!)
}

function code(text: string): string {
  return `\`${text}\``
}

function list(items: readonly string[], conjunction = 'and'): string {
  if (items.length <= 1) return items.join('')
  return `${items.slice(0, -1).join(', ')} ${conjunction} ${items[items.length - 1]}`
}

function headerCase(name: string): string {
  if (name === 'etag') return 'ETag'
  return name.replace(/(^|-)([a-z])/g, (_, dash: string, letter: string) => dash + letter.toUpperCase())
}

/** A duration in words, as the policy page states it (`24 hours`, `2 days`). */
export function duration(ms: number): string {
  const units: Array<[number, string]> = [
    [24 * 3_600_000, 'day'],
    [3_600_000, 'hour'],
    [60_000, 'minute'],
    [1_000, 'second'],
  ]
  for (const [size, unit] of units) {
    // 24 hours reads better than 1 day for the default, and 36 hours than 1.5 days.
    if (ms % size === 0 && (unit !== 'day' || ms >= 2 * size)) return plural(ms / size, unit)
  }
  return plural(ms, 'millisecond')
}

/** A size in words, as the policy page states it (`1 MiB`, `512 bytes`). */
export function bytes(n: number): string {
  if (n >= 1024 * 1024 && n % (1024 * 1024) === 0) return `${n / (1024 * 1024)} MiB`
  if (n >= 1024 && n % 1024 === 0) return `${n / 1024} KiB`
  return plural(n, 'byte')
}

function plural(n: number, unit: string): string {
  return `${n} ${unit}${n === 1 ? '' : 's'}`
}
