import { InvalidOptionError } from '../../core/errors/invalid-option.js'
import { assertKnownOptions, optionNames } from '../../core/validate.js'
import type { IdempotencyOptions } from '../options.js'
import { bytes, describePolicy, duration, type IdempotencyPolicyDocument, type PolicyError } from '../policy.js'
import { PROBLEM_CONTENT_TYPE } from '../problem.js'
import { isObject, operationName, resolveRef, selectOperations, type Json, type OperationRef } from './operations.js'

/** How `idempotencyOpenApi` finds the protected operations and names what it adds. */
export interface OpenApiOptions {
  /**
   * The protected operations, by `operationId` or as `"POST /orders/{id}"` (the path as
   * the document writes it), when the `routes` rule cannot say: a `routes` function, or
   * the middleware mounted on some routes only by the framework's router. Replaces the
   * `routes` rule; each must use a method in `methods`.
   * @default the operations whose method is in `methods` and whose path the `routes` list reaches
   */
  operations?: readonly string[]
  /** The name of the shared problem schema in `components.schemas`. @default 'Problem' */
  problemSchema?: string
}

/**
 * The smallest shape of an OpenAPI document idem works on: what `@nestjs/swagger`,
 * `@fastify/swagger`, `@hono/zod-openapi` and `openapi-types` all produce.
 */
export interface OpenApiDocumentLike {
  /** The OpenAPI version: `3.0.x` or `3.1.x`. */
  openapi: string
}

const KNOWN = optionNames<OpenApiOptions>({ operations: true, problemSchema: true })

/**
 * Describes idem's contract in an OpenAPI 3.0 or 3.1 document: every operation the
 * middleware protects gets the `Idempotency-Key` header parameter (required or not, its
 * syntax and 255-character limit, the retention), the problems idem answers with
 * (`application/problem+json`, with a shared `Problem` schema and `Retry-After` where
 * idem sends it), and the `Idempotent-Replayed` header on the responses a retry may
 * replay. Everything comes from the options the middleware is given, resolved as
 * `idempotency()` and `idem policy` resolve them, so the description cannot drift from
 * what the middleware does.
 *
 * Which operations: those whose method is in `methods` and whose path template the
 * `routes` list reaches (a parameter stands for any one segment: `/orders/*` reaches
 * `/orders/{id}`), or the `operations` named explicitly (needed with a `routes` function).
 * The document is not changed: a new one is returned, sharing what it did not change.
 *
 * Documented per protected operation: 400 (`invalid-key`, and `missing-key` when a key
 * is required), 409 (`in-flight`, and `lease-lost` unless the engine is known to be
 * transactional), 413 (`body-too-large`), 422 (`fingerprint-mismatch`) and 503
 * (`overran`, `store-unavailable`): the answers a client can act on. idem's 500s (a
 * server not set up, an outcome the store cannot hold) are server faults, like any other
 * 500 of the API, and are left to the API's own description.
 *
 * @param document the OpenAPI document, as a plain object
 * @param options the options given to `idempotency()` (any adapter; a store is not needed)
 * @param openApi which operations, if the options cannot say; the problem schema's name
 * @returns a new document with idem's header, parameter and problems on the protected operations
 * @throws InvalidOptionError for options `idempotency()` would refuse, an `operations`
 *   entry that names no protected operation, or a `routes` function without `operations`
 * @throws TypeError when the document is not OpenAPI 3.0 or 3.1
 * @see docs/openapi.md
 *
 * @example
 * import { idempotencyOpenApi } from 'idem/openapi'
 * const options = { store, scope, routes: ['/orders/*'] }
 * app.use(idempotency(options))
 * const described = idempotencyOpenApi(spec, options)
 */
export function idempotencyOpenApi<D extends OpenApiDocumentLike, Tx, Native>(
  document: D,
  options: IdempotencyOptions<Tx, Native>,
  openApi: OpenApiOptions = {},
): D {
  const described = describeIdempotency(options, openApi, 'idempotencyOpenApi')
  return described.apply(document, { explicit: openApi.operations })
}

/** What the integrations build once from the options and apply to documents or routes. */
export interface IdempotencyDescription {
  /** The policy the description states. */
  readonly policy: IdempotencyPolicyDocument
  /** The shared problem schema: its name in `components.schemas`, and the schema. */
  readonly problemSchema: readonly [name: string, schema: Json]
  /**
   * The document with the selected operations described: `explicit` names them, or
   * `candidates` (the operations a framework runs the middleware on) narrows the rule.
   */
  apply<D extends OpenApiDocumentLike>(document: D, selection: { explicit?: readonly string[] | undefined; candidates?: (ref: OperationRef) => boolean }): D
  /**
   * One operation object, described (`document` resolves its local `$ref`s). Its
   * `parameters` and `responses` are new; every other value is the operation's own.
   */
  operation(operation: Json, document: Json, name: string): Json
}

/**
 * Resolves the options once (as `idempotency()` does) and prepares what every protected
 * operation gets. `caller` names the function in error messages.
 */
export function describeIdempotency<Tx, Native>(options: IdempotencyOptions<Tx, Native>, openApi: OpenApiOptions, caller: string): IdempotencyDescription {
  if (openApi === null || typeof openApi !== 'object') throw new InvalidOptionError(`${caller}: the OpenAPI options must be an object`)
  assertKnownOptions(caller, openApi, KNOWN)
  const { operations, problemSchema: schemaName = 'Problem' } = openApi
  if (operations !== undefined && !Array.isArray(operations)) throw new InvalidOptionError(`${caller}: option "operations" must be a list of operationIds or "METHOD /path" strings`)
  if (typeof schemaName !== 'string' || !/^[A-Za-z0-9._-]+$/.test(schemaName)) {
    throw new InvalidOptionError(`${caller}: option "problemSchema" must be a component name (letters, digits, ".", "_", "-")`)
  }
  const policy = describePolicy(options, undefined)
  const errors = policy.errors.filter(documented)
  const schemaRef = `#/components/schemas/${schemaName}`
  const problemSchema = sharedProblemSchema(errors)
  const parameter = keyParameter(policy)
  const problems = problemResponses(errors, schemaRef)
  const stored = storedStatus(policy)
  const replayHeaders = {
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

  const describeOperation = (operation: Json, document: Json, name: string): Json => {
    const parameters = (Array.isArray(operation.parameters) ? operation.parameters : []).filter((p: unknown) => !isKeyParameter(resolveRef(document, p)))
    const responses: Json = { ...(isObject(operation.responses) ? operation.responses : {}) }
    for (const [status, response] of Object.entries(responses)) {
      if (stored(status)) responses[status] = withHeaders(asObject(resolveRef(document, response), `${name}: response ${status}`), replayHeaders, `${name}: response ${status}`)
    }
    for (const [status, ours] of problems) {
      const theirs = responses[status]
      responses[status] = theirs === undefined ? ours : mergedResponse(asObject(resolveRef(document, theirs), `${name}: response ${status}`), ours, `${name}: response ${status}`)
    }
    // Parameters before responses, as generators write them.
    const { parameters: _parameters, responses: _responses, ...rest } = operation
    return { ...rest, parameters: [...parameters, parameter], responses }
  }

  return {
    policy,
    problemSchema: [schemaName, problemSchema],
    operation: describeOperation,
    apply(document, { explicit, candidates }) {
      if (!isObject(document) || typeof document.openapi !== 'string' || !/^3\.[01]\./.test(document.openapi)) {
        throw new TypeError(`${caller}: the document must be an OpenAPI 3.0 or 3.1 object (its "openapi" is ${JSON.stringify(isObject(document) ? document.openapi : document)})`)
      }
      const json: Json = document
      const rule = { methods: policy.methods, routes: options.routes }
      const selected = selectOperations(json, rule, { explicit, candidates, option: caller })
      if (selected.length === 0) return document
      const paths: Json = { ...(json.paths as Json) }
      for (const ref of selected) {
        const item = { ...(paths[ref.path] as Json) }
        item[ref.method] = describeOperation(ref.operation, json, operationName(ref))
        paths[ref.path] = item
      }
      const components = isObject(json.components) ? json.components : {}
      const schemas = isObject(components.schemas) ? components.schemas : {}
      if (schemas[schemaName] !== undefined && !sameJson(schemas[schemaName], problemSchema)) {
        throw new InvalidOptionError(
          `${caller}: the document already has a components.schemas.${schemaName} of its own: name idem's with the option "problemSchema" (e.g. "IdempotencyProblem")`,
        )
      }
      return { ...json, paths, components: { ...components, schemas: { ...schemas, [schemaName]: problemSchema } } } as unknown as typeof document
    },
  }
}

/**
 * The problems a client can act on: every 4xx, and the 5xx that say when to retry
 * (`Retry-After`). idem's other 5xx are server faults (see `idempotencyOpenApi`).
 */
function documented(error: PolicyError): boolean {
  return error.status < 500 || error.retryAfterSeconds !== undefined
}

function keyParameter(policy: IdempotencyPolicyDocument): Json {
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

function sharedProblemSchema(errors: readonly PolicyError[]): Json {
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
function problemResponses(errors: readonly PolicyError[], schemaRef: string): Map<string, Json> {
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
function storedStatus(policy: IdempotencyPolicyDocument): (key: string) => boolean {
  const ranges = policy.stored.statuses
  const any = (low: number, high: number): boolean => ranges.some(([from, to]) => from <= high && to >= low)
  return (key) => {
    if (/^[1-5]\d\d$/.test(key)) return any(Number(key), Number(key))
    if (/^[1-5]XX$/i.test(key)) return any(Number(key[0]) * 100, Number(key[0]) * 100 + 99)
    return key === 'default' && ranges.length > 0
  }
}

function isKeyParameter(parameter: unknown): boolean {
  return isObject(parameter) && parameter.in === 'header' && typeof parameter.name === 'string' && parameter.name.toLowerCase() === 'idempotency-key'
}

function withHeaders(response: Json, headers: Json, where: string): Json {
  const current = response.headers === undefined ? {} : asObject(response.headers, `${where}: its headers`)
  return { ...response, headers: { ...current, ...headers } }
}

/** The operation's own response for a status idem answers too: both, as one. */
function mergedResponse(theirs: Json, ours: Json, where: string): Json {
  const description = typeof theirs.description === 'string' && theirs.description !== '' ? theirs.description : undefined
  const ourDescription = ours.description as string
  const merged: Json = {
    ...theirs,
    description: description === undefined ? ourDescription : description.includes(ourDescription) ? description : `${description}\n\n${ourDescription}`,
  }
  const content = theirs.content === undefined ? {} : asObject(theirs.content, `${where}: its content`)
  const ourMedia = (ours.content as Json)[PROBLEM_CONTENT_TYPE] as Json
  const theirMedia = content[PROBLEM_CONTENT_TYPE]
  let media = ourMedia
  if (theirMedia !== undefined) {
    const schema = asObject(theirMedia, `${where}: its ${PROBLEM_CONTENT_TYPE} content`).schema
    const alternatives = isObject(schema) && Array.isArray(schema.anyOf) ? schema.anyOf : []
    if (sameJson(schema, ourMedia.schema) || alternatives.some((s: unknown) => sameJson(s, ourMedia.schema))) media = theirMedia as Json
    else media = { ...(theirMedia as Json), schema: { anyOf: [asObject(schema, `${where}: its ${PROBLEM_CONTENT_TYPE} schema`), ourMedia.schema] } }
  }
  merged.content = { ...content, [PROBLEM_CONTENT_TYPE]: media }
  if (isObject(ours.headers)) {
    const headers = theirs.headers === undefined ? {} : asObject(theirs.headers, `${where}: its headers`)
    // The operation's own answers under this status may not carry Retry-After.
    const retryAfter = headers['Retry-After'] ?? { ...(ours.headers['Retry-After'] as Json), required: false }
    merged.headers = { ...headers, 'Retry-After': retryAfter }
  }
  return merged
}

function asObject(value: unknown, where: string): Json {
  if (isObject(value)) return value
  throw new TypeError(
    `idem: ${where} is not a plain OpenAPI object (a Zod schema or a class instance?): idem adds its headers and problems to plain objects only; write this part as plain OpenAPI`,
  )
}

function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((item, i) => sameJson(item, b[i]))
  if (!isObject(a) || !isObject(b)) return false
  const keys = Object.keys(a)
  return keys.length === Object.keys(b).length && keys.every((key) => Object.hasOwn(b, key) && sameJson(a[key], b[key]))
}
