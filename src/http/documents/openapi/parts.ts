import { bytes, duration, type IdempotencyPolicyDocument, type PolicyError } from '../policy/index.js'
import { PROBLEM_CONTENT_TYPE } from '../../problem.js'
import type { Json } from './operations.js'

// What every protected operation gets, made once from the policy: the key's parameter,
// the problem responses and their shared schema, the replay headers on stored statuses.

/** The headers a replayed response carries: the replay marker, and the marker of a body stored without it. */
export function replayHeadersOf(policy: IdempotencyPolicyDocument): Json {
  return {
    [policy.replay.marker.name]: {
      description:
        `\`${policy.replay.marker.value}\` when this response is the stored response of an earlier request with the same \`Idempotency-Key\`, replayed: the request was not processed again.`,
      schema: { type: 'string', enum: [policy.replay.marker.value] },
    },
    [policy.replay.bodyOmittedMarker.name]: {
      description:
        `\`${policy.replay.bodyOmittedMarker.value}\` on a replay of a response whose body (over ${bytes(policy.replay.maxStoredBodyBytes)}) was stored without it: this replay's body is empty.`,
      schema: { type: 'string', enum: [policy.replay.bodyOmittedMarker.value] },
    },
  }
}

/**
 * The problems a client can act on: every 4xx, and the 5xx that say when to retry
 * (`Retry-After`). idem's other 5xx are server faults (see `idempotencyOpenApi`).
 */
export function documented(error: PolicyError): boolean {
  return error.status < 500 || error.retryAfterSeconds !== undefined
}

export function keyParameter(policy: IdempotencyPolicyDocument): Json {
  const { key } = policy
  const syntax =
    `An RFC 9651 sf-string (\`"…"\`) of ${key.minLength} to ${key.maxLength} visible ASCII characters (\`!\` to \`~\`; inside the quotes \`"\` and \`\\\` are escaped with \`\\\`)` +
    (key.bareAccepted ? '; a bare value without quotes is accepted too, without `"`, `,`, `;` or `\\`.' : '. Bare values without quotes are refused.')
  const missing = policy.errors.find((e) => e.code === 'missing-key')
  return {
    name: policy.header,
    in: 'header',
    required: policy.required,
    description: [
      'Makes the request safe to retry. Mint one key per operation before its first attempt (a random UUID) and send the same key, with the same request, on every retry of it: ' +
        `the request takes effect once, and a retry gets the first response back, with \`${policy.replay.marker.name}: ${policy.replay.marker.value}\`. A new operation needs a new key.`,
      `Responses are kept for ${duration(policy.retentionMs)}; after that a key is forgotten and a request with it is processed as a new one.` +
        (policy.scope === 'per-client' ? ' Keys are kept per client: no other client sees your responses.' : ''),
      syntax,
      missing !== undefined
        ? `Required: a request without it is refused with \`${missing.status}\` (\`${missing.code}\`).`
        : 'Optional: a request without it is processed without this protection, and a retry of it may take effect twice.',
    ].join('\n\n'),
    schema: { type: 'string', pattern: keyPattern(key.bareAccepted, key.maxLength) },
    example: '"8e03978e-40d5-43e8-bc93-6894a57f9324"',
  }
}

/**
 * The header's value as a pattern: a quoted sf-string of 1 to `max` visible ASCII
 * characters (`"` and `\` escaped), or, unless strict, the same bare (without the
 * characters RFC 9651 gives a meaning: `"`, `,`, `;`, `\`). The parser's rules (src/headers/idempotency-key.ts).
 */
function keyPattern(bare: boolean, max: number): string {
  const quoted = `"(?:[\\x21\\x23-\\x5b\\x5d-\\x7e]|\\\\["\\\\]){1,${max}}"`
  const unquoted = `[\\x21\\x23-\\x2b\\x2d-\\x3a\\x3c-\\x5b\\x5d-\\x7e]{1,${max}}`
  return bare ? `^(?:${quoted}|${unquoted})$` : `^${quoted}$`
}

export function sharedProblemSchema(errors: readonly PolicyError[]): Json {
  return {
    type: 'object',
    description: 'A problem the idempotency layer answers with (RFC 9457 `application/problem+json`). None of them means the request took effect twice.',
    required: ['type', 'title', 'status', 'detail', 'code'],
    properties: {
      type: { type: 'string', format: 'uri-reference', description: "A URI that identifies the problem type; stable for each `code`." },
      title: { type: 'string', description: 'A short summary of the problem type.' },
      status: { type: 'integer', description: 'The HTTP status code of the response.' },
      detail: { type: 'string', description: 'What happened to this request.' },
      code: { type: 'string', enum: [...new Set(errors.map((e) => e.code))], description: "The problem type's stable code." },
    },
  }
}

/** One response per status idem answers with, its problems listed with what a client should do. */
export function problemResponses(errors: readonly PolicyError[], schemaRef: string): Map<string, Json> {
  const byStatus = new Map<number, PolicyError[]>()
  for (const error of errors) byStatus.set(error.status, [...(byStatus.get(error.status) ?? []), error])
  const responses = new Map<string, Json>()
  for (const [status, group] of [...byStatus].sort(([a], [b]) => a - b)) {
    const retryAfter = group.filter((e) => e.retryAfterSeconds !== undefined)
    const response: Json = {
      description: group.map((e) => `\`${e.code}\` (${e.title}): ${e.when.replace(' (see above)', ' (see the `Idempotency-Key` parameter)')}. What to do: ${e.retry}.`).join('\n\n'),
      content: {
        [PROBLEM_CONTENT_TYPE]: {
          schema: {
            allOf: [
              { $ref: schemaRef },
              {
                type: 'object',
                properties: {
                  status: { type: 'integer', enum: [status] },
                  code: { type: 'string', enum: group.map((e) => e.code) },
                  type: { type: 'string', enum: group.map((e) => e.type) },
                },
              },
            ],
          },
        },
      },
    }
    if (retryAfter.length > 0) {
      response.headers = {
        'Retry-After': {
          description: `Seconds to wait before retrying with the same key${retryAfter.length < group.length ? ` (with ${retryAfter.map((e) => `\`${e.code}\``).join(', ')})` : ''}.`,
          required: retryAfter.length === group.length,
          schema: { type: 'integer', minimum: 0 },
        },
      }
    }
    responses.set(String(status), response)
  }
  return responses
}

/** Does a response key (`201`, `2XX`, `default`) cover a status whose responses are stored, so replayed? */
export function storedStatus(policy: IdempotencyPolicyDocument): (key: string) => boolean {
  const ranges = policy.stored.statuses
  const any = (low: number, high: number): boolean => ranges.some(([from, to]) => from <= high && to >= low)
  return (key) => {
    if (/^[1-5]\d\d$/.test(key)) return any(Number(key), Number(key))
    if (/^[1-5]XX$/i.test(key)) return any(Number(key[0]) * 100, Number(key[0]) * 100 + 99)
    return key === 'default' && ranges.length > 0
  }
}

