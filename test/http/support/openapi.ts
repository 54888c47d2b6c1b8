// What the OpenAPI tests check of a described document: it is valid OpenAPI, exactly
// the protected operations carry idem's parameter, problems and replay header, and the
// responses a running app sends are the ones its document describes.
import { compileErrors, dereference, validate } from '@readme/openapi-parser'
import { Ajv } from 'ajv'
import formatsModule from 'ajv-formats'
import { expect, it } from 'vitest'

type Json = Record<string, any>

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']
/** The statuses idem documents on every protected operation (with a key required). */
export const IDEM_STATUSES = ['400', '409', '413', '422', '503']

/** Validates with @readme/openapi-parser (on a copy: it dereferences what it is given). */
export async function expectValidOpenApi(document: object): Promise<void> {
  const result = await validate(structuredClone(document) as never)
  expect(result.valid, result.valid ? '' : compileErrors(result)).toBe(true)
}

/** Every operation of the document, as `METHOD /path`. */
export function operations(document: Json): string[] {
  return Object.entries(document.paths ?? {}).flatMap(([path, item]) =>
    METHODS.filter((m) => (item as Json)[m] !== undefined).map((m) => `${m.toUpperCase()} ${path}`),
  )
}

function operation(document: Json, name: string): Json {
  const [method, path] = name.split(' ') as [string, string]
  return document.paths[path][method.toLowerCase()]
}

/** Resolves a local $ref (the parameters and responses a generator may share). */
function resolve(document: Json, value: Json): Json {
  if (typeof value?.$ref !== 'string') return value
  return value.$ref.slice(2).split('/').reduce((at: Json, part: string) => at[part], document)
}

/** The operations that gained idem's Idempotency-Key parameter. */
export function describedOperations(document: Json): string[] {
  return operations(document).filter((name) =>
    (operation(document, name).parameters ?? []).some((p: Json) => {
      const parameter = resolve(document, p)
      return parameter.in === 'header' && parameter.name === 'Idempotency-Key'
    }),
  )
}

/**
 * Exactly `protectedOperations` carry the key parameter (once), idem's problem responses
 * (problem+json against the shared schema, Retry-After on 409 and 503) and the replay
 * header on their own responses; every other operation is as the framework made it.
 */
export function expectDescribed(document: Json, protectedOperations: readonly string[], { required = true, problemSchema = 'Problem' } = {}): void {
  expect(describedOperations(document).sort()).toEqual([...protectedOperations].sort())
  expect(document.components.schemas[problemSchema]).toMatchObject({ required: ['type', 'title', 'status', 'detail', 'code'] })
  for (const name of operations(document)) {
    const op = operation(document, name)
    const responses = Object.entries(op.responses ?? {}).map(([status, r]) => [status, resolve(document, r as Json)] as const)
    const problems = responses.filter(([, r]) => r.content?.['application/problem+json'] !== undefined).map(([status]) => status)
    const replayed = responses.filter(([, r]) => r.headers?.['Idempotent-Replayed'] !== undefined).map(([status]) => status)
    if (!protectedOperations.includes(name)) {
      expect(problems, name).toEqual([])
      expect(replayed, name).toEqual([])
      expect(JSON.stringify(op), name).not.toContain('Idempotency-Key')
      continue
    }
    const keys = op.parameters.map((p: Json) => resolve(document, p)).filter((p: Json) => p.name === 'Idempotency-Key')
    expect(keys, name).toHaveLength(1)
    expect(keys[0], name).toMatchObject({ in: 'header', required, schema: { type: 'string' } })
    expect(keys[0].description, name).toContain('Responses are kept for')
    expect(problems.sort(), name).toEqual(IDEM_STATUSES)
    for (const status of IDEM_STATUSES) {
      const response = resolve(document, op.responses[status])
      const schema = response.content['application/problem+json'].schema
      expect(schema.allOf[0], `${name} ${status}`).toEqual({ $ref: `#/components/schemas/${problemSchema}` })
      expect(schema.allOf[1].properties.status.enum, `${name} ${status}`).toEqual([Number(status)])
      expect(response.headers?.['Retry-After'] !== undefined, `${name} ${status} Retry-After`).toBe(status === '409' || status === '503')
    }
    // The operation's own answers (2xx here) may be replays.
    const own = responses.filter(([status]) => /^2/.test(status)).map(([status]) => status)
    expect(own.length, name).toBeGreaterThan(0)
    for (const status of own) expect(replayed, `${name} ${status}`).toContain(status)
  }
}

/** Checks a running app's answers against its described document (see `documentedResponses`). */
export interface DocumentedResponses {
  /** The document with every `$ref` resolved. */
  readonly dereferenced: Json
  /**
   * The problem answer to `POST path` matches its documentation: its status is documented
   * for the operation, it is `application/problem+json` with this `code`, its body
   * validates against the documented schema (ajv), and it carries `Retry-After` exactly
   * where the document says (required: present, valid against the header's schema;
   * not documented: absent). Records the problem as provoked.
   * @returns the problem's body
   */
  expectDocumented(path: string, response: Response, code: string): Promise<Json>
  /**
   * Every problem the document lists (the shared schema's `code` enum) was checked by
   * `expectDocumented`, and together they cover every status idem documents.
   */
  expectEveryProblemProvoked(): void
}

/** Prepares the checks of the answers an app sends against `document`, its OpenAPI description. */
export async function documentedResponses(document: Json, { problemSchema = 'Problem' } = {}): Promise<DocumentedResponses> {
  const dereferenced = (await dereference(structuredClone(document) as never)) as Json
  const ajv = new Ajv({ strict: false, allErrors: true })
  // CommonJS: its module.exports is the plugin, and carries it as `default` too.
  formatsModule.default(ajv)
  const provoked = new Map<string, number>()

  return {
    dereferenced,
    async expectDocumented(path, response, code) {
      provoked.set(code, response.status)
      const documented = dereferenced.paths[path].post.responses[String(response.status)]
      expect(documented, `${path}: ${response.status} is documented`).toBeDefined()
      expect(response.headers.get('content-type')).toBe('application/problem+json')
      const body = (await response.json()) as Json
      expect(body.code).toBe(code)
      const validate = ajv.compile(documented.content['application/problem+json'].schema)
      expect(validate(body), JSON.stringify(validate.errors)).toBe(true)
      const retryAfter = documented.headers?.['Retry-After']
      const sent = response.headers.get('retry-after')
      if (retryAfter === undefined) expect(sent, `${path} ${code}: no Retry-After documented`).toBeNull()
      if (retryAfter?.required === true) {
        expect(sent, `${path} ${code}: Retry-After, as documented`).toMatch(/^\d+$/)
        const valid = ajv.compile(retryAfter.schema)
        expect(valid(Number(sent)), JSON.stringify(valid.errors)).toBe(true)
      }
      return body
    },
    expectEveryProblemProvoked() {
      const listed = dereferenced.components.schemas[problemSchema].properties.code.enum as string[]
      expect([...provoked.keys()].sort()).toEqual([...listed].sort())
      expect([...new Set(provoked.values())].map(String).sort()).toEqual(IDEM_STATUSES)
    },
  }
}

/**
 * The cases every described app shares, on `POST /orders` (a route that answers 201):
 * 400 missing-key and invalid-key, 413 body-too-large (the app's `maxBodyBytes` is
 * `maxBodyBytes`), 422 fingerprint-mismatch, and a replay with its documented header.
 * Declares the tests; call it inside a `describe`.
 */
export function itAnswersTheSharedProblems(
  { dereferenced, expectDocumented: check }: DocumentedResponses,
  send: (path: string, key: string | undefined, body?: string) => Promise<Response>,
  maxBodyBytes: number,
): void {
  it('400 missing-key and invalid-key', async () => {
    await check('/orders', await send('/orders', undefined), 'missing-key')
    await check('/orders', await send('/orders', 'a,b'), 'invalid-key')
    await check('/orders', await send('/orders', `"${'k'.repeat(256)}"`), 'invalid-key')
  })

  it('413 body-too-large', async () => {
    await check('/orders', await send('/orders', '"big"', JSON.stringify({ note: 'x'.repeat(maxBodyBytes) })), 'body-too-large')
  })

  it('422 fingerprint-mismatch, and a replay with its documented header', async () => {
    expect((await send('/orders', '"k-422"', '{"n":1}')).status).toBe(201)
    const replay = await send('/orders', '"k-422"', '{"n":1}')
    expect(replay.status).toBe(201)
    expect(replay.headers.get('idempotent-replayed')).toBe('true')
    expect(dereferenced.paths['/orders'].post.responses['201'].headers['Idempotent-Replayed'].schema.enum).toEqual(['true'])
    await check('/orders', await send('/orders', '"k-422"', '{"n":2}'), 'fingerprint-mismatch')
  })
}
