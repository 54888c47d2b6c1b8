import { InvalidOptionError } from '../../../core/errors/invalid-option.js'
import { assertKnownOptions, optionNames } from '../../../core/errors/option-checks.js'
import type { IdempotencyOptions } from '../../options.js'
import { describePolicy, type IdempotencyPolicyDocument } from '../policy/index.js'
import { asObject, isKeyParameter, mergedResponse, sameJson, withHeaders } from './merge.js'
import { documented, keyParameter, problemResponses, replayHeadersOf, sharedProblemSchema, storedStatus } from './parts.js'
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
  const replayHeaders = replayHeadersOf(policy)

  const describeOperation = operationDescriber({ parameter, problems, stored, replayHeaders })

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

/** What a protected operation becomes: its own key parameter replaced by idem's, the replay headers on its stored statuses, idem's problems merged into its responses. */
function operationDescriber(parts: { parameter: Json; problems: Map<string, Json>; stored: (key: string) => boolean; replayHeaders: Json }): (operation: Json, document: Json, name: string) => Json {
  const { parameter, problems, stored, replayHeaders } = parts
  return (operation, document, name) => {
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
}
