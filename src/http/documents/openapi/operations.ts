import { InvalidOptionError } from '../../../core/errors/invalid-option.js'
import { routingPath } from '../../routes.js'

/** The HTTP methods an OpenAPI path item holds operations under (3.0 and 3.1). */
export const OPENAPI_METHODS: readonly string[] = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']

/** A plain JSON object of the document (an OpenAPI object, or one of its parts). */
export type Json = Record<string, unknown>

/** One operation of the document: where it is, and the operation object itself. */
export interface OperationRef {
  /** The path template, as written in `paths` (`/orders/{id}`). */
  readonly path: string
  /** Lower case, as in the path item (`post`). */
  readonly method: string
  readonly operation: Json
}

/** `METHOD /path`: how an operation is named in messages and in the `operations` list. */
export function operationName(ref: OperationRef): string {
  return `${ref.method.toUpperCase()} ${ref.path}`
}

/** Every operation of the document, in the order of its `paths`. */
export function operationsOf(document: Json): OperationRef[] {
  const refs: OperationRef[] = []
  for (const [path, item] of Object.entries(objectAt(document, 'paths'))) {
    if (!isObject(item)) continue
    for (const method of OPENAPI_METHODS) {
      const operation = item[method]
      if (isObject(operation)) refs.push({ path, method, operation })
    }
  }
  return refs
}

/**
 * Which operations the middleware protects, decided from the document.
 * - `explicit` (the `operations` option, or the one route a route helper wraps): those,
 *   each of which must exist and use a protected method; `routes` is not consulted.
 * - otherwise `candidates` (the operations a framework runs the middleware on; default:
 *   every operation) whose method is in `methods` and whose path template the `routes`
 *   list reaches (`routesReach`). A `routes` predicate judges requests, not templates:
 *   it needs `explicit`.
 */
export function selectOperations(
  document: Json,
  rule: { readonly methods: readonly string[]; readonly routes: unknown },
  { explicit, candidates, option }: { explicit?: readonly string[] | undefined; candidates?: (ref: OperationRef) => boolean; option: string },
): OperationRef[] {
  const all = operationsOf(document)
  const methods = new Set(rule.methods.map((m) => m.toLowerCase()))
  if (explicit !== undefined) return explicit.map((name) => namedOperation(all, name, methods, option))
  const { routes } = rule
  if (typeof routes === 'function') {
    throw new InvalidOptionError(
      `${option}: the middleware's "routes" option is a function, which decides on each request and cannot be evaluated against the document's path templates: ` +
        'pass the protected operations as "operations" (operationIds or "POST /orders/{id}")',
    )
  }
  const reach = routes === undefined ? () => true : routesReach(routes as readonly (string | RegExp)[], document)
  return all.filter((ref) => (candidates?.(ref) ?? true) && methods.has(ref.method) && reach(ref))
}

const NAMED = /^([A-Za-z]+)\s+(\/.*)$/

function namedOperation(all: readonly OperationRef[], name: unknown, methods: ReadonlySet<string>, option: string): OperationRef {
  if (typeof name !== 'string' || name.length === 0) fail(option, `"operations" must list operationIds or "METHOD /path" strings, got ${JSON.stringify(name)}`)
  const named = NAMED.exec(name)
  const found = named !== null
    ? all.find((ref) => ref.method === named[1]!.toLowerCase() && ref.path === named[2])
    : all.find((ref) => ref.operation.operationId === name)
  if (found === undefined) {
    fail(option, `"operations" names ${JSON.stringify(name)}, which is no operation of the document (name one by its operationId or as "POST /path/{param}", the path as the document writes it)`)
  }
  if (!methods.has(found.method)) {
    fail(option, `"operations" names ${operationName(found)}, but the middleware protects ${[...methods].map((m) => m.toUpperCase()).join(', ')} only (its "methods" option)`)
  }
  return found
}

// A parameter's place in a path template while it is compared: a character no path has.
const PARAMETER = '\u0000'

/**
 * Does a `routes` list reach an operation's path template? The list is compared the way
 * the middleware compares it with a request's path (`routingPath` on both sides), where a
 * template parameter stands for any one segment: an exact path reaches the templates it
 * is an instance of (`/orders/42` reaches `/orders/{id}`), a `/prefix/*` the templates
 * with an instance under the prefix (`/orders/*` reaches `/orders`, `/orders/{id}` and
 * `/orders/{id}/items`). A regular expression is tried on the template as written and on
 * a sample instance (each parameter replaced by its schema's example, enum or default, or
 * `1`, a UUID or `x` by type). So an operation is documented as protected when some path
 * it stands for is protected: documenting the header on an operation that ignores it does
 * no harm, leaving it off a protected one would.
 */
export function routesReach(routes: readonly (string | RegExp)[], document: Json): (ref: OperationRef) => boolean {
  const exact: string[][] = []
  const prefixes: string[][] = []
  const patterns: RegExp[] = []
  for (const route of routes) {
    if (route instanceof RegExp) patterns.push(new RegExp(route.source, route.flags.replace(/[gy]/g, '')))
    else if (route.endsWith('/*')) prefixes.push(segments(routingPath(route.slice(0, -2))))
    else exact.push(segments(routingPath(route)))
  }
  return (ref) => {
    const template = segments(routingPath(ref.path.replace(/\{[^}/]*\}/g, PARAMETER))).map(segmentMatcher)
    const covers = (path: readonly string[], whole: boolean): boolean =>
      (whole ? path.length === template.length : path.length <= template.length) && path.every((segment, i) => template[i]!(segment))
    if (exact.some((path) => covers(path, true)) || prefixes.some((path) => covers(path, false))) return true
    if (patterns.length === 0) return false
    const samples = [ref.path, sampleInstance(ref, document)]
    return patterns.some((p) => samples.some((path) => p.test(path) || p.test(routingPath(path))))
  }
}

function segments(path: string): string[] {
  return path === '/' ? [] : path.slice(1).split('/')
}

function segmentMatcher(segment: string): (candidate: string) => boolean {
  if (!segment.includes(PARAMETER)) return (candidate) => candidate === segment
  const pattern = new RegExp(`^${segment.split(PARAMETER).map(escapeRegExp).join('[^/]+')}$`)
  return (candidate) => pattern.test(candidate)
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}

/** The template with each parameter replaced by a plausible value of its schema. */
function sampleInstance(ref: OperationRef, document: Json): string {
  const declared = new Map<string, Json>()
  const item = objectAt(objectAt(document, 'paths'), ref.path)
  for (const list of [item.parameters, ref.operation.parameters]) {
    if (!Array.isArray(list)) continue
    for (const entry of list) {
      const parameter = resolveRef(document, entry)
      if (isObject(parameter) && parameter.in === 'path' && typeof parameter.name === 'string') declared.set(parameter.name, parameter)
    }
  }
  return ref.path.replace(/\{([^}/]*)\}/g, (_, name: string) => sampleValue(declared.get(name), document))
}

function sampleValue(parameter: Json | undefined, document: Json): string {
  const schema = resolveRef(document, parameter?.schema)
  const candidates = [parameter?.example, isObject(schema) ? schema.example : undefined, isObject(schema) && Array.isArray(schema.enum) ? schema.enum[0] : undefined, isObject(schema) ? schema.default : undefined]
  const given = candidates.find((value) => typeof value === 'string' || typeof value === 'number')
  if (given !== undefined) return encodeURIComponent(String(given))
  if (!isObject(schema)) return 'x'
  if (schema.type === 'integer' || schema.type === 'number') return '1'
  if (schema.format === 'uuid') return '00000000-0000-4000-8000-000000000000'
  return 'x'
}

/** Follows a local `$ref` (`#/components/...`) to what it names; anything else as it is. */
export function resolveRef(document: Json, value: unknown, seen = 0): unknown {
  if (!isObject(value) || typeof value.$ref !== 'string' || !value.$ref.startsWith('#/') || seen > 16) return value
  let target: unknown = document
  for (const part of value.$ref.slice(2).split('/')) {
    const key = decodeURIComponent(part).replace(/~1/g, '/').replace(/~0/g, '~')
    target = isObject(target) && Object.hasOwn(target, key) ? target[key] : undefined
  }
  return target === undefined ? value : resolveRef(document, target, seen + 1)
}

/** A plain object (`{}` or `Object.create(null)`), the only kind the document is made of. */
export function isObject(value: unknown): value is Json {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false
  const prototype = Object.getPrototypeOf(value) as unknown
  return prototype === Object.prototype || prototype === null
}

function objectAt(parent: Json, key: string): Json {
  const value = parent[key]
  return isObject(value) ? value : {}
}

function fail(option: string, problem: string): never {
  throw new InvalidOptionError(`${option}: ${problem}`)
}
