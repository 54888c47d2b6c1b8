// makeIdempotent and middyIdempotent in process, on the memory stores: what the options
// decide (key, scope, payload, time) and how each mistake is named. The real backends
// are in test/lambda/.
import type { Context } from 'aws-lambda'
import { describe, expect, it } from 'vitest'
import { createIdem } from '../core/engine.js'
import { FingerprintMismatchError, InvalidOptionError, MissingKeyError, OverranError } from '../core/errors/index.js'
import { createLeasedIdem } from '../core/leased/engine.js'
import { discard } from '../core/result.js'
import { memoryLeasedStore, memoryStore } from '../stores/memory/index.js'
import { makeIdempotent, middyIdempotent, type IdemContext, type MiddyRequest } from './index.js'

function context(remainingMs = 30_000, functionName = 'fn'): Context {
  const deadline = Date.now() + remainingMs
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:us-east-1:123456789012:function:${functionName}`,
    memoryLimitInMB: '128',
    awsRequestId: 'r',
    logGroupName: 'g',
    logStreamName: 's',
    getRemainingTimeInMillis: () => deadline - Date.now(),
    done: () => {},
    fail: () => {},
    succeed: () => {},
  }
}

describe('makeIdempotent', () => {
  it('keys an EventBridge event by its id and an SNS event by its message id; other events need `key`', async () => {
    const calls: unknown[] = []
    const handler = makeIdempotent(async (event: unknown) => (calls.push(event), calls.length), { store: memoryStore() })
    expect(await handler({ id: 'e-1', detail: {} }, context())).toBe(1)
    expect(await handler({ id: 'e-1', detail: {} }, context())).toBe(1)
    const sns = { Records: [{ EventSource: 'aws:sns', Sns: { MessageId: 'm-1', Message: '{}' } }] }
    expect(await handler(sns, context())).toBe(2)
    expect(await handler(sns, context())).toBe(2)
    await expect(handler({ orderId: 'o-1' }, context())).rejects.toThrow(MissingKeyError)
    await expect(handler({ Records: [sns.Records[0], sns.Records[0]] }, context())).rejects.toThrow(/no idempotency key/)
    const keyed = makeIdempotent(async () => 'ok', { store: memoryStore(), key: () => undefined })
    await expect(keyed({}, context())).rejects.toThrow('"key" returned none')
  })

  it('hashes keys that are not 1–255 visible ASCII, so any string keys an event', async () => {
    let runs = 0
    const handler = makeIdempotent(async () => ++runs, { store: memoryStore(), key: (event: { k: string }) => event.k })
    for (const k of ['ordre n° 42', 'x'.repeat(300), 'a b']) {
      expect(await handler({ k }, context())).toBe(runs)
      expect(await handler({ k }, context())).toBe(runs)
    }
    expect(runs).toBe(3)
  })

  it('scopes keys by the function name by default, or by `scope`', async () => {
    const store = memoryStore()
    let runs = 0
    const handler = makeIdempotent(async () => ++runs, { store })
    await handler({ id: 'e' }, context(30_000, 'a'))
    await handler({ id: 'e' }, context(30_000, 'b'))
    expect(runs).toBe(2)
    const shared = makeIdempotent(async () => ++runs, { store, scope: 'orders' })
    await shared({ id: 'e' }, context(30_000, 'a'))
    await shared({ id: 'e' }, context(30_000, 'b'))
    expect(runs).toBe(3)
    const noName = { ...context(), functionName: '' }
    await expect(handler({ id: 'e2' }, noName)).rejects.toThrow('option "scope" is required when the context has no functionName')
  })

  it('refuses another payload under a used key; `input` picks what must match', async () => {
    const handler = makeIdempotent(async (event: { id: string; n: number; at: string }) => event.n, { store: memoryStore(), input: (event) => event.n })
    expect(await handler({ id: 'e', n: 1, at: 't1' }, context())).toBe(1)
    expect(await handler({ id: 'e', n: 1, at: 't2' }, context())).toBe(1)
    await expect(handler({ id: 'e', n: 2, at: 't1' }, context())).rejects.toThrow(FingerprintMismatchError)
  })

  it('a discarded result is answered and not stored; the key is free', async () => {
    let runs = 0
    const handler = makeIdempotent(async () => (++runs === 1 ? discard('try later') : 'done'), { idem: createLeasedIdem({ store: memoryLeasedStore() }) })
    expect(await handler({ id: 'e' }, context())).toBe('try later')
    expect(await handler({ id: 'e' }, context())).toBe('done')
    expect(await handler({ id: 'e' }, context())).toBe('done')
  })

  it('bounds the call by the invocation: an invocation within marginMs of its end claims nothing', async () => {
    let runs = 0
    const handler = makeIdempotent(async () => ++runs, { store: memoryStore(), marginMs: 1_000 })
    await expect(handler({ id: 'e' }, context(900))).rejects.toThrow(OverranError)
    expect(runs).toBe(0)
    // Without Lambda's clock (a unit test's bare object), the engine's deadline alone.
    expect(await handler({ id: 'e' }, { functionName: 'fn' } as Context)).toBe(1)
  })

  it('names the option at creation', () => {
    const store = memoryStore()
    const fn = async () => 1
    expect(() => makeIdempotent(fn, {})).toThrow('makeIdempotent: option "store" is required')
    expect(() => makeIdempotent(fn, { store, idem: createIdem({ store }) })).toThrow('option "store" and "idem" are exclusive')
    expect(() => makeIdempotent(fn, { idem: createIdem({ store }), onOutcome: () => {} })).toThrow('option "onOutcome" goes to the engine')
    expect(() => makeIdempotent(fn, { store: {} as never })).toThrow('option "store" must be a key store (a KeyStore, with begin()) or a leased store (a LeasedStore, with claim())')
    expect(() => makeIdempotent(fn, { store, key: 'id' as never })).toThrow('option "key" must be a function')
    expect(() => makeIdempotent(fn, { store, input: 'detail' as never })).toThrow('option "input" must be a function')
    expect(() => makeIdempotent(fn, { store, scope: '' })).toThrow('option "scope" must be a non-empty string')
    expect(() => makeIdempotent(fn, { store, marginMs: -1 })).toThrow('makeIdempotent: option "marginMs" must be a whole number')
    expect(() => makeIdempotent(fn, { store, waitMs: 1.5 })).toThrow('makeIdempotent: option "waitMs"')
    expect(() => makeIdempotent('fn' as never, { store })).toThrow(InvalidOptionError)
    expect(() => makeIdempotent(fn, { store, eventKeyJmesPath: 'id' } as never)).toThrow('"eventKeyJmesPath" is not an option')
  })
})

describe('middyIdempotent', () => {
  /** Drives the middleware as Middy 6 does: before, then the handler and after (unless answered early), or onError. */
  async function invoke<Event>(middleware: ReturnType<typeof middyIdempotent<Event, unknown>>, event: Event, handler: (request: MiddyRequest<Event>) => Promise<unknown>) {
    const request: MiddyRequest<Event> = { event, context: context(), response: undefined, error: undefined }
    await middleware.before(request)
    if (Object.hasOwn(request, 'earlyResponse')) return { early: true, response: request.earlyResponse }
    try {
      request.response = await handler(request)
      await middleware.after(request)
    } catch (error) {
      request.error = error
      await middleware.onError(request)
      throw error
    }
    return { early: false, response: request.response }
  }

  it('answers a replay early with the stored result, null included', async () => {
    const middleware = middyIdempotent<{ id: string }, unknown>({ store: memoryStore() })
    expect(await invoke(middleware, { id: 'e' }, async () => null)).toEqual({ early: false, response: null })
    expect(await invoke(middleware, { id: 'e' }, async () => 'not run')).toEqual({ early: true, response: null })
  })

  it('hands the handler the transaction and key on context.idem, and frees the key when it throws', async () => {
    const middleware = middyIdempotent<{ id: string }, unknown>({ store: memoryStore() })
    await expect(
      invoke(middleware, { id: 'e' }, async (request) => {
        expect(request.context).toMatchObject({ idem: { key: 'e', scope: 'fn' } })
        expect((request.context as IdemContext<unknown>).idem.tx).toBeDefined()
        throw new Error('boom')
      }),
    ).rejects.toThrow('boom')
    expect(await invoke(middleware, { id: 'e' }, async () => 'second')).toEqual({ early: false, response: 'second' })
  })
})
