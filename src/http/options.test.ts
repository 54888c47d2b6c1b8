import { readFileSync } from 'node:fs'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { createIdem } from '../core/engine.js'
import * as errors from '../core/errors/index.js'
import { IdemError, type IdemErrorCode } from '../core/errors/idem-error.js'
import {
  BodyTooLargeError,
  CorruptBodyError,
  DEFAULT_PROBLEM_TYPE_BASE as PROBLEM_TYPE_BASE,
  idempotency,
  idempotencyPolicy,
  largestStoredBody,
  problemResponse,
  PROBLEMS,
  SHARED_SCOPE,
  UnsupportedEncodingError,
} from './fetch/index.js'
import { idempotency as expressIdempotency } from './adapters/express/index.js'
import { idempotency as fastifyIdempotency } from './adapters/fastify/index.js'
import { idempotency as honoIdempotency } from './adapters/hono/index.js'
import { IdempotencyInterceptor, IdempotencyModule } from './adapters/nestjs/index.js'
import { memoryStore } from '../stores/memory/index.js'
import { RouteHijackedError } from './adapters/node/route-hijacked.js'

const store = memoryStore()
const scope = (): string => 'acct'

describe('options are validated at start-up', () => {
  const bad: Array<[string, Record<string, unknown>]> = [
    ['store', {}],
    ['store', { store: { name: 'not a store' } }],
    ['store', { store, idem: createIdem({ store }) }],
    ['idem', { idem: { run: 'no' } }],
    ['idem', { idem: { run: async () => ({ value: undefined, replayed: false, stored: true }) } }],
    ['store', { store: { name: 'undeclared', begin: store.begin } }],
    ['onOutcome', { idem: createIdem({ store }), onOutcome: () => {} }],
    ['scope', { store, scope: 'acct' }],
    ['methods', { store, scope, methods: [] }],
    ['methods', { store, scope, methods: ['POST', 'NOT A METHOD'] }],
    ['routes', { store, scope, routes: ['orders'] }],
    ['routes', { store, scope, routes: '/orders' }],
    ['required', { store, scope, required: 'yes' }],
    ['strict', { store, scope, strict: 1 }],
    ['ttlMs', { store, scope, ttlMs: 0 }],
    ['ttlMs', { store, scope, ttlMs: 1.5 }],
    ['deadlineMs', { store, scope, deadlineMs: 0 }],
    ['deadlineMs', { store, scope, deadlineMs: '30s' }],
    ['waitMs', { store, scope, waitMs: -1 }],
    ['waitMs', { store, scope, waitMs: 2 ** 60 }],
    ['wait', { store, scope, wait: 100 }],
    ['maxBodyBytes', { store, scope, maxBodyBytes: Number.NaN }],
    ['maxStoredBodyBytes', { store, scope, maxStoredBodyBytes: -1 }],
    ['maxStoredBodyBytes', { store, scope, maxStoredBodyBytes: 1.5 }],
    ['maxStoredBodyBytes', { store, scope, maxStoredBodyBytes: '1mb' }],
    ['maxStoredBodyBytes', { store, scope, maxStoredBodyBytes: largestStoredBody(store.maxOutcomeBytes) + 1 }],
    ['fields', { store, scope, fields: 'amount' }],
    ['fields', { store, scope, fields: [''] }],
    ['storeStatus', { store, scope, storeStatus: [200] }],
    ['replayHeaders', { store, scope, replayHeaders: ['content type'] }],
    ['onOutcome', { store, scope, onOutcome: 'log' }],
    ['waitMillis', { store, scope, waitMillis: 100 }],
  ]
  for (const [option, options] of bad) {
    it(`rejects a bad "${option}" with InvalidOptionError naming it: ${JSON.stringify(options, (k, v) => (k === 'store' || k === 'idem' ? typeof v : v))}`, () => {
      expect(() => idempotency(options as never)).toThrow(errors.InvalidOptionError)
      expect(() => idempotency(options as never)).toThrow(`"${option}"`)
    })
  }

  it('every adapter validates the same way when it is created, not on the first request', () => {
    const nest = [(options: never) => new IdempotencyInterceptor(options), (options: never) => IdempotencyModule.forRoot(options)]
    for (const make of [honoIdempotency, expressIdempotency, fastifyIdempotency, ...nest]) {
      expect(() => make({ store, scope, waitMs: -1 } as never)).toThrow(/option "waitMs"/)
      expect(() => make({ store, scope, maxStoredBodyBytes: -1 } as never)).toThrow(/option "maxStoredBodyBytes"/)
    }
  })

  it('accepts an engine instead of a store, and every documented option', () => {
    const onOutcome = vi.fn()
    expect(() =>
      idempotency({
        store,
        scope,
        methods: ['post', 'PUT'],
        routes: ['/orders', '/orders/*', /^\/v\d\//],
        required: false,
        strict: true,
        ttlMs: 60_000,
        fields: ['amount', 'customer.id'],
        storeStatus: (status) => status < 300,
        replayHeaders: ['Content-Type'],
        waitMs: 100,
        deadlineMs: 10_000,
        maxBodyBytes: 10,
        maxStoredBodyBytes: 0,
        onOutcome,
      }),
    ).not.toThrow()
    expect(() => idempotency({ idem: createIdem({ store, onOutcome }), scope })).not.toThrow()
  })
})

describe('maxStoredBodyBytes and what the store holds', () => {
  const storedBody = (options: Parameters<typeof idempotencyPolicy>[0]): number =>
    (JSON.parse(idempotencyPolicy(options, { format: 'json' })) as { replay: { maxStoredBodyBytes: number } }).replay.maxStoredBodyBytes

  it('defaults to 1 MiB, or to the largest body the store holds when that is less', () => {
    expect(storedBody({ store, scope })).toBe(1024 * 1024)
    const small = { ...memoryStore(), maxOutcomeBytes: 64 * 1024 }
    expect(storedBody({ store: small, scope })).toBe(largestStoredBody(64 * 1024))
    expect(storedBody({ idem: createIdem({ store: small }), scope })).toBe(largestStoredBody(64 * 1024))
  })

  it('refuses more than the store holds, naming the option, the store and its limit', () => {
    const small = { ...memoryStore(), maxOutcomeBytes: 64 * 1024 }
    const largest = largestStoredBody(64 * 1024)
    expect(() => idempotency({ store: small, scope, maxStoredBodyBytes: largest + 1 })).toThrow(
      `idempotency: option "maxStoredBodyBytes" is ${largest + 1} bytes, but the memory store holds outcomes of at most 65536 bytes, which leaves room for response bodies of at most ${largest} bytes`,
    )
    expect(() => idempotency({ store: small, scope, maxStoredBodyBytes: largest })).not.toThrow()
  })
})

describe('a missing scope function', () => {
  afterEach(() => vi.restoreAllMocks())

  it('warns once, loudly, at start-up, and then keys share one constant scope', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {})
    const handle = idempotency({ store: memoryStore() })
    expect(warn).toHaveBeenCalledTimes(1)
    expect(String(warn.mock.calls[0]![0])).toMatch(/no "scope" option.*another's stored response/s)
    const seen: string[] = []
    const next = async (_request: Request, idem: { scope: string } | undefined): Promise<Response> => {
      seen.push(idem!.scope)
      return new Response('ok', { status: 201 })
    }
    for (let i = 0; i < 3; i++) {
      await handle(new Request('http://x/o', { method: 'POST', headers: { 'idempotency-key': `k${i}` } }), next)
    }
    expect(seen).toEqual([SHARED_SCOPE, SHARED_SCOPE, SHARED_SCOPE])
    expect(warn).toHaveBeenCalledTimes(1)
  })

  it('does not warn when a scope function is given', () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {})
    idempotency({ store, scope })
    expect(warn).not.toHaveBeenCalled()
  })
})

describe('fingerprint fields and the onOutcome hook', () => {
  it('with `fields`, a body differing only in other fields replays', async () => {
    const handle = idempotency({ store: memoryStore(), scope, fields: ['amount'] })
    let runs = 0
    const next = async (): Promise<Response> => new Response(`run ${++runs}`, { status: 201 })
    const send = (body: unknown): Promise<Response> =>
      handle(new Request('http://x/pay', { method: 'POST', headers: { 'idempotency-key': 'f1', 'content-type': 'application/json' }, body: JSON.stringify(body) }), next)
    await send({ amount: 5, note: 'first' })
    const again = await send({ amount: 5, note: 'second' })
    expect(again.headers.get('idempotent-replayed')).toBe('true')
    expect((await send({ amount: 6, note: 'first' })).status).toBe(422)
    expect(runs).toBe(1)
  })

  it('passes every outcome to onOutcome', async () => {
    const kinds: string[] = []
    const handle = idempotency({ store: memoryStore(), scope, onOutcome: (event) => kinds.push(event.kind) })
    const request = (): Request => new Request('http://x/o', { method: 'POST', headers: { 'idempotency-key': 'o1' }, body: 'a' })
    const next = async (): Promise<Response> => new Response('ok', { status: 201 })
    await handle(request(), next)
    await handle(request(), next)
    await handle(new Request('http://x/o', { method: 'POST', headers: { 'idempotency-key': 'o1' }, body: 'b' }), next)
    expect(kinds).toEqual(['fresh', 'replayed', 'mismatch'])
  })
})

describe('problem types', () => {
  const docs = readFileSync(new URL('../../docs/problems.md', import.meta.url), 'utf8')
  // One of each error class idem exports: a new code without documentation fails here.
  const samples = (Object.values(errors) as unknown[])
    .filter((value): value is new (message: string) => IdemError => typeof value === 'function' && value.prototype instanceof IdemError)
    .map((ErrorClass) => new ErrorClass('m'))
  const byCode = (code: IdemErrorCode): IdemError => samples.find((error) => error.code === code)!

  it('covers every error class', () => {
    expect(samples.map((error) => error.code)).toEqual(expect.arrayContaining(['missing-key', 'invalid-key', 'fingerprint-mismatch', 'in-flight', 'store-unavailable']))
  })

  for (const error of [...samples, new BodyTooLargeError('m'), new UnsupportedEncodingError('m'), new CorruptBodyError('m'), new RouteHijackedError('m')]) {
    const { status, title, detail = 'm' } = PROBLEMS[error.code]
    it(`${error.code}: ${status} problem+json whose type is documented under #${error.code}`, async () => {
      const response = problemResponse(error)
      expect(response.status).toBe(status)
      expect(response.headers.get('content-type')).toBe('application/problem+json')
      // Problems whose message may name infrastructure answer with a fixed detail instead.
      expect(await response.json()).toEqual({ type: `${PROBLEM_TYPE_BASE}#${error.code}`, title, status, detail, code: error.code })
      expect(response.headers.get('retry-after')).toBe(error.retryAfterSeconds === undefined ? null : String(error.retryAfterSeconds))
      // GitHub turns a "## <code>" heading into the #<code> anchor.
      expect(docs).toMatch(new RegExp(`^## ${error.code}$`, 'm'))
      expect(docs).toContain(`| ${status} |`)
    })
  }

  it('415 lists the codings that would do in Accept-Encoding (RFC 9110 §12.5.3); no other problem carries it', () => {
    expect(problemResponse(new UnsupportedEncodingError('m')).headers.get('accept-encoding')).toBe('gzip, deflate, br')
    for (const error of [...samples, new BodyTooLargeError('m'), new CorruptBodyError('m'), new RouteHijackedError('m')]) expect(problemResponse(error).headers.get('accept-encoding')).toBeNull()
  })

  it('409 and 503 carry Retry-After', () => {
    expect(problemResponse(byCode('in-flight')).headers.get('retry-after')).toBe('1')
    expect(problemResponse(byCode('store-unavailable')).headers.get('retry-after')).toBe('1')
  })

  it('an error the route throws that is not idem’s propagates unchanged, after the rollback', async () => {
    const handle = idempotency({ store: memoryStore(), scope })
    const boom = new Error('boom')
    await expect(
      handle(new Request('http://x/o', { method: 'POST', headers: { 'idempotency-key': 't1' } }), async () => {
        throw boom
      }),
    ).rejects.toBe(boom)
  })
})
