/**
 * Which requests the middleware protects by path: the `routes` option compiled once, at
 * start-up, into a matcher that fails closed (`routingPath`).
 */
import { InvalidOptionError } from '../core/errors/invalid-option.js'

/** Whether a request, with this path (as sent, without the query), is protected. */
export type RouteMatcher<Native> = (request: Native, path: string) => boolean

/**
 * Matches a request against the `routes` list so that it fails closed: a request that
 * any of the frameworks could route to a listed path is protected. Frameworks route
 * differently from the raw path (Express ignores case and a trailing slash, Hono and
 * Fastify decode `%XX` first), so paths and listed routes are both compared in their
 * `routingPath` form, and regular expressions are tried on the raw path and on that form.
 * Undefined without `routes`: every path is protected, and no matcher runs.
 * @throws InvalidOptionError for a `routes` that is neither
 * @example const matches = routeMatcher(['/orders/*']) // matches?.(request, '/Orders/42/') === true
 */
export function routeMatcher<Native>(routes: ((request: Native) => boolean) | readonly (string | RegExp)[] | undefined): RouteMatcher<Native> | undefined {
  if (routes === undefined) return undefined
  if (typeof routes === 'function') return (request) => routes(request)
  if (!Array.isArray(routes) || !routes.every((r) => r instanceof RegExp || (typeof r === 'string' && r.startsWith('/')))) {
    fail('must be a function (request) => boolean or a list of paths ("/orders", "/orders/*") and regular expressions')
  }
  const exact = new Set<string>()
  const prefixes: string[] = []
  const patterns: RegExp[] = []
  for (const route of routes) {
    if (route instanceof RegExp) patterns.push(new RegExp(route.source, route.flags.replace(/[gy]/g, '')))
    else if (route.endsWith('/*')) {
      const base = routingPath(route.slice(0, -2))
      exact.add(base)
      prefixes.push(base === '/' ? '/' : `${base}/`)
    } else exact.add(routingPath(route))
  }
  return (_request, raw) => {
    const path = routingPath(raw)
    return exact.has(path) || prefixes.some((p) => path.startsWith(p)) || patterns.some((p) => p.test(raw) || p.test(path))
  }
}

/**
 * A path in the form the most lenient router would match it: `%XX` decoded (repeatedly,
 * a few times), lower case, runs of slashes as one, `.` and `..` segments resolved, no
 * trailing slash. Two paths that any supported framework could route to the same
 * handler have the same form; the converse need not hold (that only protects more).
 * @example routingPath('/%6Frders//42/') // → '/orders/42'
 */
export function routingPath(path: string): string {
  let p = path
  for (let round = 0; round < 3 && p.includes('%'); round++) {
    const decoded = decodePercent(p)
    if (decoded === p) break
    p = decoded
  }
  p = p.toLowerCase().replace(/\\/g, '/')
  if (p.includes('//')) p = p.replace(/\/{2,}/g, '/')
  if (p.includes('/.')) p = withoutDotSegments(p)
  if (p.length > 1 && p.endsWith('/')) p = p.slice(0, -1)
  return p.startsWith('/') ? p : `/${p}`
}

// Each run of escapes on its own, so one malformed escape leaves the others decoded;
// a run that is not UTF-8 keeps its ASCII escapes decoded only.
function decodePercent(path: string): string {
  return path.replace(/(?:%[0-9a-fA-F]{2})+/g, (run) => {
    try {
      return decodeURIComponent(run)
    } catch {
      return run.replace(/%([0-7][0-9a-fA-F])/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)))
    }
  })
}

function withoutDotSegments(path: string): string {
  const out: string[] = []
  for (const segment of path.split('/')) {
    if (segment === '.' || segment === '') continue
    if (segment === '..') out.pop()
    else out.push(segment)
  }
  return `/${out.join('/')}${path.endsWith('/') || path.endsWith('/.') || path.endsWith('/..') ? '/' : ''}`
}

function fail(problem: string): never {
  throw new InvalidOptionError(`idempotency: option "routes" ${problem}`)
}
