import type pg from 'pg'
import type { FetchFunction } from '../../src/client/index.js'
import type { IdempotencyContext } from '../../src/http/fetch/index.js'
import { postgresStore, type PgClient, type PostgresStore } from '../../src/stores/postgres/index.js'

/** One request as the server saw it, before the middleware: which call and attempt it belonged to, and its key header. */
export interface SeenRequest {
  call: string | null
  key: string | null
  /** The `x-attempt` tag `recordingFetch` put on it, when the client used one. */
  attempt?: string | null
}

/** One attempt as the client sent it, and how it ended at the client. */
export interface SentAttempt {
  /** `<x-call>#<n>`: the call's tag and the attempt's number within the call. */
  id: string
  call: string
  /** The status of the answer the client got, or `failed`: no answer (a network error, a timeout). */
  outcome: number | 'failed' | 'pending'
  /** Why it failed, cause included (`fetch failed: read ECONNRESET`), when it did. */
  error?: string
}

/**
 * A `fetch` for the client's `fetch` option that tags every attempt with `x-attempt:
 * <x-call>#<n>` and records how it ended, so a test can follow each attempt from the
 * client to the server and back.
 */
export function recordingFetch(): { fetch: FetchFunction; sent: SentAttempt[] } {
  const sent: SentAttempt[] = []
  const perCall = new Map<string, number>()
  const fetch: FetchFunction = async (request) => {
    const call = request.headers.get('x-call') ?? '?'
    const n = (perCall.get(call) ?? 0) + 1
    perCall.set(call, n)
    const attempt: SentAttempt = { id: `${call}#${n}`, call, outcome: 'pending' }
    sent.push(attempt)
    request.headers.set('x-attempt', attempt.id)
    try {
      const response = await globalThis.fetch(request)
      attempt.outcome = response.status
      return response
    } catch (error) {
      attempt.outcome = 'failed'
      attempt.error = error instanceof Error ? `${error.message}${error.cause instanceof Error ? `: ${error.cause.message}` : ''}` : String(error)
      throw error
    }
  }
  return { fetch, sent }
}

export interface OrderBody {
  customer: string
  amount: number
}

export interface OrdersApp {
  store: PostgresStore
  /**
   * The business logic every server variant shares: one order row and one charge,
   * written through the idempotency transaction. An order for customer `slow` waits
   * until `releaseSlow()` before it commits, so a test can hold a key in flight.
   */
  writeOrder(idem: IdempotencyContext<PgClient>, order: OrderBody): Promise<{ orderId: number } & OrderBody>
  /** The route handler in the neutral middleware's `next` shape. */
  placeOrder(request: Request, idem: IdempotencyContext<PgClient> | undefined): Promise<Response>
  /** Resolves once an order for `slow` waits in its transaction: its key is held. */
  slowHeld(): Promise<void>
  releaseSlow(): void
  counts(): Promise<{ orders: number; charges: number; distinctKeys: number }>
  orderFor(key: string): Promise<{ id: number; customer: string; amount: number }[]>
}

/**
 * The order service the client tests run against: `POST /orders` writes an order row
 * and a charge in a fake payment ledger, both through the idempotency transaction, and
 * answers 201. Neither table has a unique constraint, so a handler that ran twice would
 * show up as an extra row instead of being hidden by the database.
 */
export async function ordersApp(pool: pg.Pool, schema: string): Promise<OrdersApp> {
  const store = postgresStore({ pool, schema })
  await store.migrate()
  await pool.query(`
    CREATE TABLE "${schema}".orders (id bigserial PRIMARY KEY, idem_key text NOT NULL, customer text NOT NULL, amount int NOT NULL);
    CREATE TABLE "${schema}".charges (id bigserial PRIMARY KEY, order_id bigint NOT NULL REFERENCES "${schema}".orders (id), amount int NOT NULL);
  `)
  let releaseSlow!: () => void
  let slow = new Promise<void>((resolve) => (releaseSlow = resolve))
  let held!: () => void
  let slowHeld = new Promise<void>((resolve) => (held = resolve))

  async function writeOrder(idem: IdempotencyContext<PgClient>, { customer, amount }: OrderBody): Promise<{ orderId: number } & OrderBody> {
    const { rows } = await idem.tx.query(
      `INSERT INTO "${schema}".orders (idem_key, customer, amount) VALUES ($1, $2, $3) RETURNING id`,
      [idem.key, customer, amount],
    )
    const orderId = Number((rows[0] as { id: string }).id)
    await idem.tx.query(`INSERT INTO "${schema}".charges (order_id, amount) VALUES ($1, $2)`, [orderId, amount])
    if (customer === 'slow') {
      held()
      await slow
    }
    return { orderId, customer, amount }
  }

  return {
    store,
    writeOrder,
    async placeOrder(request, idem) {
      // The middleware requires a key on POST, so an unprotected order would be a bug in the wiring.
      if (idem === undefined) return Response.json({ error: 'no idempotency context' }, { status: 500 })
      const order = await writeOrder(idem, (await request.json()) as OrderBody)
      return Response.json(order, { status: 201, headers: { location: `/orders/${order.orderId}` } })
    },
    slowHeld: () => slowHeld,
    releaseSlow() {
      releaseSlow()
      slow = new Promise<void>((resolve) => (releaseSlow = resolve))
      slowHeld = new Promise<void>((resolve) => (held = resolve))
    },
    async counts() {
      const { rows } = await pool.query(`
        SELECT (SELECT count(*)::int FROM "${schema}".orders) AS orders,
               (SELECT count(*)::int FROM "${schema}".charges) AS charges,
               (SELECT count(DISTINCT idem_key)::int FROM "${schema}".orders) AS "distinctKeys"`)
      return rows[0] as { orders: number; charges: number; distinctKeys: number }
    },
    async orderFor(key) {
      const { rows } = await pool.query(`SELECT id::int, customer, amount FROM "${schema}".orders WHERE idem_key = $1`, [key])
      return rows as { id: number; customer: string; amount: number }[]
    },
  }
}

/** Runs `task(i)` for i in [0, count) with at most `concurrency` running at once. */
export async function pooled<T>(count: number, concurrency: number, task: (i: number) => Promise<T>): Promise<T[]> {
  const results = new Array<T>(count)
  let next = 0
  const worker = async (): Promise<void> => {
    while (next < count) {
      const i = next++
      results[i] = await task(i)
    }
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker))
  return results
}
