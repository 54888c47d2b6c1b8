import type { IdempotencyContext } from '../../../src/http/options.js'
import type { Backend } from './backends.js'

/** A promise with its resolver, for holding a route until the test lets it go. */
export interface Latch {
  promise: Promise<void>
  open(): void
}

export function latch(): Latch {
  let open!: () => void
  const promise = new Promise<void>((resolve) => (open = resolve))
  return { promise, open }
}

/** What one test app has seen; fresh per case. */
export interface AppState {
  /** Route handler runs, by path. */
  runs: Record<string, number>
  /** `/slow` waits for this before it writes anything. */
  gate: Latch
  /** Resolved when `/slow` has started (it then holds the key). */
  slowEntered: Latch
  /** How many times the scope function ran (once per protected request). */
  scopeCalls: number
  /** Called after every scope call. */
  onScope?: () => void
}

export function appState(): AppState {
  return { runs: {}, gate: latch(), slowEntered: latch(), scopeCalls: 0 }
}

/** The principal, as an authentication layer would derive it: here from a bearer token. */
export function tenantOf(authorization: string | null | undefined): string {
  const match = /^Bearer (\S+)$/.exec(authorization ?? '')
  return match === null ? 'anonymous' : `tenant:${match[1]}`
}

export interface RouteInput {
  method: string
  path: string
  body: string
  idem: IdempotencyContext<unknown> | undefined
}

export interface RouteOutput {
  status: number
  headers: Array<[string, string]>
  body: string
  /** Thrown once the answer is written (the front ends on Node's response, where a route can answer and run on). */
  thenThrow?: Error
  /** Written on the raw response after taking the reply over (`reply.hijack()`: the Fastify front ends). */
  hijack?: true
}

/**
 * The routes every front end serves, written once: each adapter's test app maps its
 * framework's request to `RouteInput` and `RouteOutput` back to its response.
 *
 * - `POST|PATCH /orders`, `POST /other`: write an effect, 201 with Location, two
 *   cookies and a private header (for the replay allow-list), echoing the body.
 * - `POST /fail` 500, `POST /busy` 429: write an effect first (to prove the rollback).
 * - `POST /gone` 404: a non-transient 4xx, stored.
 * - `POST /throw`: writes an effect, then throws.
 * - `POST /answer-then-throw`: like `/orders`, then throws once the answer is written.
 * - `POST /hijack`: like `/orders`, written on the raw response after `reply.hijack()`.
 * - `POST /slow`: waits for `state.gate`, then behaves like `/orders`.
 * - `POST /json`: 400 for a body that is not JSON, else 200: for the fuzz test.
 * - `POST /spaced`: writes an effect, then 201 with a `Cache-Control` value that has a
 *   space after it (`no-store `), as a Lambda function may return one.
 * - `POST /big`: writes an effect, then 201 with Location and a text body of as many
 *   bytes as the request body says (for `maxStoredBodyBytes`).
 * - `GET /orders`: 200, never protected.
 */
export async function runRoute<Tx>(backend: Backend<Tx>, state: AppState, input: RouteInput): Promise<RouteOutput> {
  const { path, body, idem } = input
  const run = (state.runs[path] = (state.runs[path] ?? 0) + 1)
  const effect = async (): Promise<void> => {
    if (idem !== undefined) await backend.writeEffect(idem.tx as Tx, idem.key)
  }
  const json = (status: number, value: unknown, headers: Array<[string, string]> = []): RouteOutput => ({
    status,
    headers: [['content-type', 'application/json; charset=utf-8'], ...headers],
    body: JSON.stringify(value),
  })
  const created = (): RouteOutput =>
    json(201, { route: path, method: input.method, run, echo: body, scope: idem?.scope ?? null, protected: idem !== undefined }, [
      ['location', `${path}/${run}`],
      ['set-cookie', `session=s${run}; Path=/; HttpOnly`],
      ['set-cookie', 'theme=dark; Path=/'],
      ['x-debug', `private-${run}`],
    ])

  if (input.method === 'GET') return json(200, { route: path, protected: idem !== undefined })
  switch (path) {
    case '/orders':
    case '/other':
      await effect()
      return created()
    case '/slow':
      state.slowEntered.open()
      await state.gate.promise
      await effect()
      return created()
    case '/fail':
      await effect()
      return json(500, { error: 'failed', run })
    case '/busy':
      await effect()
      return json(429, { error: 'slow down', run }, [['retry-after', '1']])
    case '/gone':
      return json(404, { error: 'no such thing', run })
    case '/throw':
      await effect()
      throw new Error(`boom ${run}`)
    case '/answer-then-throw':
      await effect()
      return { ...created(), thenThrow: new Error(`follow-up work failed ${run}`) }
    case '/hijack':
      await effect()
      return { ...created(), hijack: true }
    case '/big':
      await effect()
      return { status: 201, headers: [['content-type', 'text/plain; charset=utf-8'], ['location', `${path}/${run}`]], body: 'x'.repeat(Number(body)) }
    case '/spaced':
      await effect()
      return json(201, { run }, [['cache-control', 'no-store '], ['location', `${path}/${run}`]])
    case '/json':
      await effect()
      try {
        JSON.parse(body)
      } catch {
        return json(400, { error: 'invalid JSON' })
      }
      return json(200, { bytes: body.length })
    default:
      return json(404, { error: 'no route' })
  }
}
