// The policy says what the middleware does: it changes with the options, and a real Hono
// app built with the same options behaves as the policy states (methods, retention,
// replayed headers, problem types, Retry-After, required, strict, body limit, storage).
import { Hono, type Context } from 'hono'
import { describe, expect, it } from 'vitest'
import { createIdem } from '../../../core/engine.js'
import { InvalidOptionError } from '../../../core/errors/invalid-option.js'
import { createLeasedIdem } from '../../../core/leased/engine.js'
import { memoryLeasedStore } from '../../../stores/memory/leased.js'
import { memoryStore } from '../../../stores/memory/store.js'
import { idempotencyPolicy, type IdempotencyOptions, type IdempotencyPolicyDocument } from '../../fetch/index.js'
import { idempotency } from '../../hono.js'

type Options = IdempotencyOptions<unknown, Context>
const scope = (c: Context): string => c.req.header('authorization') ?? 'anonymous'
const policy = (options: Options): IdempotencyPolicyDocument => JSON.parse(idempotencyPolicy(options, { format: 'json' })) as IdempotencyPolicyDocument
const errorOf = (doc: IdempotencyPolicyDocument, code: string) => doc.errors.find((e) => e.code === code)
const typeOf = async (response: Response): Promise<string> => ((await response.json()) as { type: string }).type

/** A Hono app behind the middleware with `options`; every method of /things counts its runs. */
function app(options: Options) {
  const runs = { count: 0 }
  const hono = new Hono()
  hono.use('/things', idempotency(options as never))
  hono.on(['POST', 'PATCH', 'PUT', 'DELETE'], '/things', async (c) => {
    runs.count++
    const wanted = Number(c.req.header('x-answer-status') ?? 201)
    if (c.req.header('x-hold') !== undefined) await new Promise((resolve) => setTimeout(resolve, Number(c.req.header('x-hold'))))
    return c.json({ run: runs.count }, wanted as 201, { location: `/things/${runs.count}`, 'x-trace': `t-${runs.count}` })
  })
  const send = (method: string, key: string | undefined, body: unknown = { amount: 1 }, headers: Record<string, string> = {}) =>
    hono.request('http://localhost/things', {
      method,
      headers: { authorization: 'acct_1', 'content-type': 'application/json', ...(key === undefined ? {} : { 'idempotency-key': key }), ...headers },
      body: JSON.stringify(body),
    })
  return { runs, send }
}

describe('the policy follows the options', () => {
  const base: Options = { store: memoryStore(), scope }

  it('methods, retention, problem types and required each change what it states', () => {
    const defaults = policy(base)
    expect(defaults.methods).toEqual(['POST', 'PATCH'])
    expect(defaults.retentionMs).toBe(24 * 3_600_000)
    expect(errorOf(defaults, 'in-flight')!.type).toBe('urn:idem:problem#in-flight')
    expect(errorOf(defaults, 'missing-key')).toBeDefined()

    expect(policy({ ...base, methods: ['post', 'DELETE'] }).methods).toEqual(['POST', 'DELETE'])
    expect(policy({ ...base, ttlMs: 90 * 60_000 }).retentionMs).toBe(5_400_000)
    expect(idempotencyPolicy({ ...base, ttlMs: 90 * 60_000 }, { format: 'md' })).toContain('are stored for 90 minutes')
    const typed = policy({ ...base, problemTypes: 'https://docs.example.com/errors' })
    expect(typed.errors.map((e) => e.type)).toEqual(typed.errors.map((e) => `https://docs.example.com/errors#${e.code}`))
    expect(errorOf(policy({ ...base, problemTypes: (code) => `https://x.example/p/${code}` }), 'fingerprint-mismatch')!.type).toBe('https://x.example/p/fingerprint-mismatch')
    const optional = policy({ ...base, required: false })
    expect(optional.required).toBe(false)
    expect(errorOf(optional, 'missing-key')).toBeUndefined()
    expect(idempotencyPolicy({ ...base, required: false }, { format: 'md' })).toContain('processed without this protection')
  })

  it('the engine settings count as the middleware counts them: its own first, then the engine\'s explicit ones', () => {
    const engine = createIdem({ store: memoryStore(), ttlMs: 3_600_000, waitMs: 1_500 })
    expect(policy({ idem: engine, scope }).retentionMs).toBe(3_600_000)
    expect(policy({ idem: engine, scope }).concurrent.waitMs).toBe(1_500)
    expect(policy({ idem: engine, scope, ttlMs: 60_000, waitMs: 0 })).toMatchObject({ retentionMs: 60_000, concurrent: { waitMs: 0 } })
    expect(policy({ idem: createIdem({ store: memoryStore() }), scope }).concurrent.waitMs).toBe(0)
  })

  it('deadlineMs counts the same way: the middleware\'s own, then the engine\'s explicit one, then 30 s over HTTP', () => {
    const engine = createIdem({ store: memoryStore(), deadlineMs: 90_000 })
    expect(policy({ idem: engine, scope }).deadlineMs).toBe(90_000)
    expect(policy({ idem: engine, scope, deadlineMs: 5_000 }).deadlineMs).toBe(5_000)
    // The engine's own default (5 minutes) was not set explicitly: HTTP's applies.
    expect(policy({ idem: createIdem({ store: memoryStore() }), scope }).deadlineMs).toBe(30_000)
    expect(policy(base).deadlineMs).toBe(30_000)
    expect(errorOf(policy(base), 'overran')).toMatchObject({ status: 503, retryAfterSeconds: 1 })
    expect(idempotencyPolicy({ ...base, deadlineMs: 45_000 }, { format: 'md' })).toContain('still being processed 45 seconds after it started is given up on')
  })

  it('scope, strictness, fields, body limit, replayed headers and stored statuses', () => {
    expect(policy(base).scope).toBe('per-client')
    expect(policy({ store: memoryStore() }).scope).toBe('shared')
    expect(policy({ ...base, strict: true }).key.bareAccepted).toBe(false)
    expect(policy({ ...base, fields: ['amount', 'customer.id'] }).fingerprint.body).toEqual(['amount', 'customer.id'])
    expect(policy({ ...base, maxBodyBytes: 4096 }).fingerprint.maxBodyBytes).toBe(4096)
    expect(idempotencyPolicy({ ...base, maxBodyBytes: 4096 }, { format: 'md' })).toContain('larger than 4 KiB')
    expect(policy({ ...base, replayHeaders: ['Content-Type', 'X-Request-Cost'] }).replay.headers).toEqual(['content-type', 'x-request-cost'])
    expect(policy(base).stored).toEqual({
      statuses: [[200, 407], [409, 424], [426, 428], [430, 499]],
      summary: '2xx, 3xx and 4xx except 408, 425 and 429',
      notStored: '408, 425, 429 and 5xx',
    })
    expect(policy({ ...base, storeStatus: (s) => s === 200 || s === 201 }).stored.summary).toBe('200 and 201')
  })

  it('the routes option, or the paths the router protects, name the endpoints', () => {
    expect(policy(base).paths).toBe('all')
    expect(policy({ ...base, routes: ['/payments', '/refunds/*'] }).paths).toEqual(['/payments', '/refunds/*'])
    expect(policy({ ...base, routes: () => true }).paths).toBe('selected')
    expect(JSON.parse(idempotencyPolicy(base, { format: 'json', paths: ['/v1/payments'] })).paths).toEqual(['/v1/payments'])
    expect(idempotencyPolicy({ ...base, routes: ['/payments'] }, { format: 'md' })).toContain('on `POST` and `PATCH` requests to `/payments`')
  })

  it('leased mode: lease-lost is listed and a different request under a running key is 422 at once', () => {
    const leased = policy({ idem: createLeasedIdem({ store: memoryLeasedStore() }), scope })
    expect(errorOf(leased, 'lease-lost')).toMatchObject({ status: 409, retryAfterSeconds: 1 })
    expect(leased.concurrent.mismatchWhileRunning).toBe('immediate')
    const transactional = policy(base)
    expect(errorOf(transactional, 'lease-lost')).toBeUndefined()
    expect(transactional.concurrent.mismatchWhileRunning).toBe('after-first-finishes')
  })

  it('needs no store, and refuses options the middleware refuses, with the same error', () => {
    expect(policy({ scope }).methods).toEqual(['POST', 'PATCH'])
    for (const bad of [{ scope, ttlMs: 0 }, { scope, methods: [] }, { scope, retention: 5 }] as Options[]) {
      expect(() => idempotencyPolicy(bad, { format: 'md' })).toThrow(InvalidOptionError)
      expect(() => idempotency(bad as never)).toThrow(InvalidOptionError)
    }
    expect(() => idempotencyPolicy(base, { format: 'pdf' } as never)).toThrow(TypeError)
    expect(() => idempotencyPolicy(undefined as never, { format: 'md' })).toThrow(InvalidOptionError)
  })

  it('Markdown and HTML carry the same statements; HTML escapes and links', () => {
    const options: Options = { ...base, problemTypes: 'https://docs.example.com/errors?a=1&b=2' }
    const md = idempotencyPolicy(options, { format: 'md', title: 'Retrying safely' })
    const page = idempotencyPolicy(options, { format: 'html', title: 'Retrying safely' })
    expect(page.startsWith('<!doctype html>')).toBe(true)
    expect(idempotencyPolicy(options, { format: 'html', title: 'Retries <safe>' })).toContain('<title>Retries &lt;safe&gt;</title>')
    expect(page).toContain('<a href="https://docs.example.com/errors?a=1&amp;b=2#in-flight"><code>in-flight</code></a>')
    const fragment = idempotencyPolicy(options, { format: 'html', fragment: true, headingLevel: 2 })
    expect(fragment.startsWith('<h2>Idempotent requests</h2>')).toBe(true)
    const words = (text: string): string =>
      text
        .replace(/<[^>]+>/g, ' ')
        .replace(/&quot;/g, '"')
        .replace(/&lt;/g, '<')
        .replace(/&gt;/g, '>')
        .replace(/&amp;/g, '&')
        .replace(/\]\([^)]*\)|[`#|[\]-]/g, ' ')
        .split(/\s+/)
        .filter(Boolean)
        .join(' ')
    expect(words(page.slice(page.indexOf('<body>'), page.indexOf('</body>')))).toBe(words(md))
  })
})

describe('a Hono app with the same options does what its policy states', () => {
  it('the methods listed need a key; a method not listed is passed through, unprotected', async () => {
    const options: Options = { store: memoryStore(), scope, methods: ['POST', 'DELETE'] }
    const doc = policy(options)
    const { runs, send } = app(options)
    for (const method of doc.methods) {
      const response = await send(method, undefined)
      expect(response.status).toBe(errorOf(doc, 'missing-key')!.status)
      expect(await typeOf(response)).toBe(errorOf(doc, 'missing-key')!.type)
    }
    for (const method of ['PATCH', 'PUT'].filter((m) => !doc.methods.includes(m))) {
      const before = runs.count
      expect((await send(method, '"k-unlisted"')).headers.get('idempotent-replayed')).toBeNull()
      expect((await send(method, '"k-unlisted"')).headers.get('idempotent-replayed')).toBeNull()
      expect(runs.count - before).toBe(2)
    }
  })

  it('replays within the stated retention, with the stated headers and marker; after it the key is new', async () => {
    const options: Options = { store: memoryStore(), scope, ttlMs: 1_000 }
    const doc = policy(options)
    expect(doc.retentionMs).toBe(1_000)
    const { runs, send } = app(options)
    const first = await send('POST', '"k-ttl"')
    expect(first.status).toBe(201)
    const replay = await send('POST', '"k-ttl"')
    expect(replay.status).toBe(201)
    expect(await replay.json()).toEqual({ run: 1 })
    expect(replay.headers.get(doc.replay.marker.name)).toBe(doc.replay.marker.value)
    expect(doc.replay.headers).toContain('location')
    expect(replay.headers.get('location')).toBe('/things/1')
    expect(doc.replay.headers).not.toContain('x-trace')
    expect(replay.headers.get('x-trace')).toBeNull()
    expect(runs.count).toBe(1)
    await new Promise((resolve) => setTimeout(resolve, doc.retentionMs + 100))
    const later = await send('POST', '"k-ttl"')
    expect(later.headers.get(doc.replay.marker.name)).toBeNull()
    expect(runs.count).toBe(2)
  })

  it('a response over the stated stored-body limit replays without its body, with the stated marker', async () => {
    const options: Options = { store: memoryStore(), scope, maxStoredBodyBytes: 8 }
    const doc = policy(options)
    expect(doc.replay.maxStoredBodyBytes).toBe(8)
    expect(idempotencyPolicy(options, { format: 'md' })).toContain('larger than 8 bytes is stored without its body')
    const { runs, send } = app(options)
    expect(await (await send('POST', '"k-large"')).text()).toBe('{"run":1}')
    const replay = await send('POST', '"k-large"')
    expect(replay.headers.get(doc.replay.bodyOmittedMarker.name)).toBe(doc.replay.bodyOmittedMarker.value)
    expect(await replay.text()).toBe('')
    expect(runs.count).toBe(1)
  })

  it('a stored status replays, a status the policy says is not stored runs again', async () => {
    const options: Options = { store: memoryStore(), scope }
    const doc = policy(options)
    const stored = (status: number): boolean => doc.stored.statuses.some(([from, to]) => status >= from && status <= to)
    const { runs, send } = app(options)
    for (const status of [200, 201, 302, 404, 408, 429, 500, 503]) {
      const key = `"k-status-${status}"`
      const before = runs.count
      await send('POST', key, { amount: 1 }, { 'x-answer-status': String(status) })
      await send('POST', key, { amount: 1 }, { 'x-answer-status': String(status) })
      expect(runs.count - before, `status ${status}`).toBe(stored(status) ? 1 : 2)
    }
  })

  it('422 and 409 carry the stated types, status and Retry-After', async () => {
    const options: Options = { store: memoryStore(), scope, problemTypes: 'https://docs.example.com/errors' }
    const doc = policy(options)
    const { send } = app(options)
    await send('POST', '"k-1"', { amount: 1 })
    const mismatch = await send('POST', '"k-1"', { amount: 2 })
    expect(mismatch.status).toBe(errorOf(doc, 'fingerprint-mismatch')!.status)
    expect(await typeOf(mismatch)).toBe(errorOf(doc, 'fingerprint-mismatch')!.type)

    const first = send('POST', '"k-held"', { amount: 1 }, { 'x-hold': '300' })
    await new Promise((resolve) => setTimeout(resolve, 50))
    const duplicate = await send('POST', '"k-held"', { amount: 1 })
    expect(duplicate.status).toBe(doc.concurrent.status)
    expect(duplicate.headers.get('retry-after')).toBe(String(doc.concurrent.retryAfterSeconds))
    expect(await typeOf(duplicate)).toBe(errorOf(doc, 'in-flight')!.type)
    expect((await first).status).toBe(201)
  })

  it('strict refuses the bare keys the policy says are refused; the body limit answers 413; optional keys pass through', async () => {
    const strict: Options = { store: memoryStore(), scope, strict: true, maxBodyBytes: 64 }
    const doc = policy(strict)
    expect(doc.key.bareAccepted).toBe(false)
    const { send } = app(strict)
    expect((await send('POST', 'bare-key')).status).toBe(errorOf(doc, 'invalid-key')!.status)
    expect((await send('POST', '"quoted-key"')).status).toBe(201)
    expect((await send('POST', '"k-big"', { text: 'x'.repeat(doc.fingerprint.maxBodyBytes) })).status).toBe(errorOf(doc, 'body-too-large')!.status)
    expect((await send('POST', `"${'k'.repeat(doc.key.maxLength + 1)}"`)).status).toBe(400)
    expect((await send('POST', `"${'k'.repeat(doc.key.maxLength)}"`)).status).toBe(201)

    const optional: Options = { store: memoryStore(), scope, required: false }
    const { runs, send: sendOptional } = app(optional)
    expect(policy(optional).required).toBe(false)
    await sendOptional('POST', undefined)
    await sendOptional('POST', undefined)
    expect(runs.count).toBe(2)
  })
})
