// The Fetch and Hono front ends of the conformance table (test/http/support/frontends.ts),
// over the built package: `idem/fetch` and `idem/hono` as an app on Bun or Deno imports them.
import { Hono, type Context } from 'hono'
import { idempotency as fetchIdempotency, type IdempotencyOptions } from 'idem/fetch'
import { idempotency as honoIdempotency, type IdemVariables } from 'idem/hono'
import { runRoute, tenantOf, type AppState, type RouteOutput } from '../../http/support/app.js'
import type { Backend } from '../../http/support/backends.js'
import type { AppOptions, Call, FrontEnd } from '../../http/support/frontends.js'

function middlewareOptions<Native>(
  backend: Backend,
  { storeDown, ...options }: AppOptions,
  state: AppState,
  principal: (request: Native) => string,
): IdempotencyOptions<unknown, Native> {
  return {
    // The backends are typed by the sources' declarations, the middleware by the package's (see kit.ts).
    ...(backend.protection(storeDown ? 'down' : undefined) as Pick<IdempotencyOptions<unknown, Native>, 'store' | 'idem'>),
    scope: (request) => {
      state.scopeCalls++
      state.onScope?.()
      return principal(request)
    },
    ...(options as IdempotencyOptions<unknown, Native>),
  }
}

function toWebResponse(out: RouteOutput): Response {
  const headers = new Headers()
  for (const [name, value] of out.headers) headers.append(name, value)
  return new Response(out.body, { status: out.status, headers })
}

function toWebRequest(call: Call): Request {
  const headers = new Headers()
  for (const value of [call.key ?? []].flat()) headers.append('idempotency-key', value)
  if (call.tenant !== undefined) headers.set('authorization', `Bearer ${call.tenant}`)
  if (call.contentType !== undefined) headers.set('content-type', call.contentType)
  if (call.contentEncoding !== undefined) headers.set('content-encoding', call.contentEncoding)
  const init: RequestInit & { duplex?: 'half' } = { method: call.method ?? 'POST', headers }
  if (typeof call.body === 'string' && call.stream) {
    const bytes = new TextEncoder().encode(call.body)
    const half = Math.floor(bytes.length / 2)
    init.body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(bytes.slice(0, half))
        controller.enqueue(bytes.slice(half))
        controller.close()
      },
    })
    init.duplex = 'half'
  } else if (call.body !== undefined) init.body = call.body
  return new Request(`http://test.local${call.path}`, init)
}

/** The fetch-style handler called directly, as `Bun.serve` or `Deno.serve` would (a throw becomes a 500). */
export const fetchFrontEnd: FrontEnd = {
  name: 'fetch',
  async start(backend, options, state) {
    const handle = fetchIdempotency(middlewareOptions<Request>(backend, options, state, (request) => tenantOf(request.headers.get('authorization'))))
    return {
      async send(call) {
        const request = toWebRequest(call)
        try {
          return await handle(request, async (forwarded, idem) =>
            toWebResponse(await runRoute(backend, state, { method: forwarded.method, path: new URL(forwarded.url).pathname, body: await forwarded.text(), idem })),
          )
        } catch {
          return new Response('Internal Server Error', { status: 500 })
        }
      },
      close: async () => {},
    }
  },
}

/** Hono 4, reached in-process with `app.request`. */
export const honoFrontEnd: FrontEnd = {
  name: 'hono',
  async start(backend, options, state) {
    const app = new Hono<{ Variables: IdemVariables<unknown> }>()
    app.use(honoIdempotency(middlewareOptions<Context>(backend, options, state, (c) => tenantOf(c.req.header('authorization')))))
    // Hono's default error handler logs every thrown error; the tests throw on purpose.
    app.onError((_error, c) => c.text('Internal Server Error', 500))
    app.all('*', async (c) =>
      toWebResponse(await runRoute(backend, state, { method: c.req.method, path: c.req.path, body: await c.req.text(), idem: c.get('idem') })),
    )
    return {
      send: async (call) => app.request(toWebRequest(call)),
      close: async () => {},
    }
  },
}
