import type { IdempotencyPolicyDocument, PolicyError } from './describe.js'
import type { Block } from './render.js'
import { bytes, code, duration, headerCase, list } from './words.js'

/** The page, as blocks: a heading at `level`, its sections one below. */
export function policyBlocks(doc: IdempotencyPolicyDocument, title: string, level: number): Block[] {
  const section = (text: string): Block => ({ kind: 'heading', level: Math.min(level + 1, 6), text })
  return [
    { kind: 'heading', level, text: title },
    { kind: 'paragraph', text: introduction(doc) },
    section('Sending a key'),
    { kind: 'list', items: sendingAKey(doc) },
    section('What counts as the same request'),
    sameRequest(doc),
    section('What is stored and replayed'),
    storedAndReplayed(doc),
    section('While the first request is still running'),
    whileRunning(doc),
    section('Errors'),
    ...errorBlocks(doc),
  ]
}

/** A problem of the document's; every document lists those the page names. */
function problem(doc: IdempotencyPolicyDocument, code: PolicyError['code']): PolicyError {
  return doc.errors.find((e) => e.code === code)!
}

/** How the page refers to a problem: its status and its linked code. */
const ref = (e: PolicyError): string => `\`${e.status}\` ([\`${e.code}\`](${e.type}))`

function protectedRequests(doc: IdempotencyPolicyDocument): string {
  const methods = list(doc.methods.map(code))
  return doc.paths === 'all'
      ? `${methods} requests`
      : doc.paths === 'selected'
        ? `${methods} requests to the endpoints that say so`
        : `${methods} requests to ${list(doc.paths.map(code))}`
}

function introduction(doc: IdempotencyPolicyDocument): string {
  const where = protectedRequests(doc)
  return (
    `This API accepts an \`Idempotency-Key\` header on ${where}, so that a request can be retried safely: ` +
    'however often it is sent with the same key, it takes effect once, and every retry gets the response of the first.'
  )
}

function sendingAKey(doc: IdempotencyPolicyDocument): string[] {
  const methods = list(doc.methods.map(code))
  const missing = doc.errors.find((e) => e.code === 'missing-key')
  const invalid = problem(doc, 'invalid-key')
  return [
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
}

function sameRequest(doc: IdempotencyPolicyDocument): Block {
  const mismatch = problem(doc, 'fingerprint-mismatch')
  const tooLarge = problem(doc, 'body-too-large')
  return {
    kind: 'paragraph',
    text:
      'The first request sent with a key is remembered with a fingerprint of its method, its path, its query parameters (in any order, though the values of a repeated parameter keep theirs) and ' +
      (doc.fingerprint.body === 'whole'
        ? 'its body. JSON bodies are compared canonically, so key order and whitespace do not matter; form bodies as fields in any order (the values of a repeated field in theirs); multipart bodies by their parts, whatever boundary separates them; other bodies byte for byte.'
        : `these fields of its JSON or form body: ${list(doc.fingerprint.body.map(code))}. Other fields do not count.`) +
      ` A retry must send the same request: the same key with a different request is refused with ${ref(mismatch)}. ` +
      `Bodies larger than ${bytes(doc.fingerprint.maxBodyBytes)} are refused with ${ref(tooLarge)}.`,
  }
}

function storedAndReplayed(doc: IdempotencyPolicyDocument): Block {
  const retention = duration(doc.retentionMs)
  const headers = doc.replay.headers.map((h) => code(headerCase(h)))
  return {
    kind: 'list',
    items: [
      `Responses with status ${doc.stored.summary} are stored for ${retention}. A retry with the same key within that time gets the stored response back and the request is not processed again: ` +
        `the same status, the same body, ${headers.length === 0 ? 'no headers of the original' : `the headers ${list(headers)}`}, and \`${doc.replay.marker.name}: ${doc.replay.marker.value}\`. Other headers of the first response are not replayed.`,
      `A response whose body is larger than ${bytes(doc.replay.maxStoredBodyBytes)} is stored without its body: a retry gets its status and headers (not those describing the body), an empty body and \`${doc.replay.bodyOmittedMarker.name}: ${doc.replay.bodyOmittedMarker.value}\`, and the request is not processed again.`,
      `Responses with status ${doc.stored.notStored} are not stored: a retry with the same key is processed again.`,
      `After ${retention} a key is forgotten, and a request with it is processed as a new one: retry an operation within ${retention} of its first attempt.`,
    ],
  }
}

function whileRunning(doc: IdempotencyPolicyDocument): Block {
  const inFlight = problem(doc, 'in-flight')
  const mismatch = problem(doc, 'fingerprint-mismatch')
  const overran = problem(doc, 'overran')
  const retryAfter = inFlight.retryAfterSeconds === undefined ? '' : ` with \`Retry-After: ${inFlight.retryAfterSeconds}\``
  const wait =
    doc.concurrent.waitMs === 0
      ? `A retry that arrives while the first request with its key is still being processed is answered at once with ${ref(inFlight)}${retryAfter}.`
      : `A retry that arrives while the first request with its key is still being processed waits up to ${duration(doc.concurrent.waitMs)} for it and then gets its response. If the first is still running by then, the retry is answered with ${ref(inFlight)}${retryAfter}.`
  return {
    kind: 'paragraph',
    text:
      `${wait} Nothing was processed: wait that long and retry with the same key. You get the first request's response, or, if the first failed, your retry is processed.` +
      (doc.concurrent.mismatchWhileRunning === 'immediate'
        ? ` A different request under a running key is refused with ${ref(mismatch)} at once.`
        : doc.concurrent.mismatchWhileRunning === 'after-first-finishes'
          ? ` A different request under a running key also gets ${code(String(inFlight.status))} until the first has finished, and ${code(String(mismatch.status))} after.`
          : '') +
      ` A request still being processed ${duration(doc.deadlineMs)} after it started is given up on and answered with ${ref(overran)}${overran.retryAfterSeconds === undefined ? '' : ` with \`Retry-After: ${overran.retryAfterSeconds}\``}: nothing is stored for its key, and a retry with the same key is processed afresh.`,
  }
}

function errorBlocks(doc: IdempotencyPolicyDocument): Block[] {
  return [
    {
      kind: 'paragraph',
      text:
        'Errors are `application/problem+json` (RFC 9457) with a stable `type` URI and `code`. None of them means that a request took effect twice: do what the last column says.',
    },
    {
      kind: 'table',
      head: ['status', 'type', 'when', 'what to do'],
      rows: doc.errors.map((e) => [code(String(e.status)), `[\`${e.code}\`](${e.type})`, e.when, e.retry]),
    },
  ]
}
