/**
 * `idem/hono`: the Idempotency-Key middleware for Hono 4. It converts to and from the
 * neutral handler (`idem/fetch`), which holds all the behaviour.
 */
import type { Context, MiddlewareHandler } from 'hono'
import { cloneRawRequest } from 'hono/request'
import { idempotency as neutral } from './handler.js'
import type { IdempotencyContext, IdempotencyOptions } from './options.js'

export type { IdempotencyContext, IdempotencyOptions } from './options.js'

/** The context variable the middleware sets: `c.get('idem')`. */
export type IdemVariables<Tx> = { idem: IdempotencyContext<Tx> | undefined }

// Thrown through the engine when the route threw: Hono has already turned the error
// into the app's error response, and the engine must roll back rather than store it.
class RouteThrew extends Error {}

/**
 * Hono 4 middleware. The route finds the key and its transaction with `c.get('idem')`
 * (type the app with `IdemVariables<Tx>`), and reads the body as usual. `scope`
 * receives the Hono context, so it can read what authentication set on it.
 *
 * @example
 * const app = new Hono<{ Variables: IdemVariables<PgClient> }>()
 * app.use('/orders/*', idempotency({ store, scope: (_request, c) => c.get('jwtPayload').sub }))
 * app.post('/orders', async (c) => {
 *   await c.get('idem')?.tx.query('INSERT INTO orders (body) VALUES ($1)', [await c.req.json()])
 *   return c.json({ ok: true }, 201)
 * })
 */
export function idempotency<Tx>(options: IdempotencyOptions<Tx, Context>): MiddlewareHandler<{ Variables: IdemVariables<Tx> }> {
  const handle = neutral<Tx, Context>(options)

  return async function idempotency(c, next) {
    // An earlier middleware may have read the body through c.req; Hono cached it.
    const request = c.req.raw.bodyUsed ? await cloneRawRequest(c.req) : c.req.raw
    let routeRan = false
    let response: Response
    try {
      response = await handle(
        request,
        async (forwarded, idem) => {
          routeRan = true
          c.req.raw = forwarded
          c.set('idem', idem)
          await next()
          if (idem !== undefined && c.error !== undefined) throw new RouteThrew()
          return c.res
        },
        c,
      )
    } catch (error) {
      if (error instanceof RouteThrew) return // c.res is the app's error response
      throw error
    }
    if (!routeRan) return response
    if (response === c.res) return
    // Assigning c.res merges the old response's headers in; clear it first so the
    // answer is exactly the middleware's.
    c.res = undefined
    c.res = response
  }
}
