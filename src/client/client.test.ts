import { describe, expect, it } from 'vitest'
import {
  createClient,
  DeadlineExceededError,
  InvalidKeyError,
  InvalidOptionError,
  ProblemError,
  RetriesExhaustedError,
  type ClientOptions,
  type RetryEvent,
} from './index.js'
import { networkError, scriptedFetch, unquote } from '../../test/client/fake-fetch.js'

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/
const fast: ClientOptions = { backoff: { baseMs: 1, maxMs: 2 } }
const post = (body: RequestInit['body'] = '{"sku":"A-1"}'): RequestInit => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body })

describe('one key per call', () => {
  it('mints a UUIDv7 before the first attempt and sends it, as an sf-string, on every attempt', async () => {
    const { fetch, sent } = scriptedFetch([{ throw: networkError() }, 503, 502, 201])
    const result = await createClient({ fetch, ...fast }).fetch('http://api.test/orders', post())
    expect(result.attempts).toBe(4)
    expect(sent).toHaveLength(4)
    expect(result.key).toMatch(UUID_V7)
    for (const attempt of sent) {
      expect(attempt.key).toBe(`"${result.key}"`)
      expect(attempt.body).toBe('{"sku":"A-1"}')
      expect(attempt.method).toBe('POST')
    }
  })

  it('never gives two calls the same key', async () => {
    const { fetch, sent } = scriptedFetch([201])
    const client = createClient({ fetch })
    const results = await Promise.all(Array.from({ length: 200 }, () => client.fetch('http://api.test/orders', post())))
    const keys = new Set(results.map((r) => r.key))
    expect(keys.size).toBe(200)
    expect(new Set(sent.map((s) => s.key)).size).toBe(200)
  })

  it("uses the caller's key, from the call options or an Idempotency-Key header already set", async () => {
    const { fetch, sent } = scriptedFetch([503, 201])
    const client = createClient({ fetch, ...fast })
    const a = await client.fetch('http://api.test/orders', post(), { key: 'order-"42"\\x' })
    expect(a.key).toBe('order-"42"\\x')
    expect(sent.map((s) => unquote(s.key))).toEqual(['order-"42"\\x', 'order-"42"\\x'])
    expect(sent[0]?.key).toBe('"order-\\"42\\"\\\\x"')

    const b = await client.fetch('http://api.test/orders', { method: 'POST', body: 'x', headers: { 'idempotency-key': 'bare-key-1' } })
    expect(b.key).toBe('bare-key-1')
    expect(sent.at(-1)?.key).toBe('"bare-key-1"')
  })

  it('refuses a malformed key, or two different keys, before sending anything', async () => {
    const { fetch, sent } = scriptedFetch([201])
    const client = createClient({ fetch })
    await expect(client.fetch('http://api.test/x', post(), { key: '' })).rejects.toBeInstanceOf(InvalidKeyError)
    await expect(client.fetch('http://api.test/x', post(), { key: 'caf\u00e9' })).rejects.toBeInstanceOf(InvalidKeyError)
    await expect(client.fetch('http://api.test/x', post(), { key: 'k'.repeat(256) })).rejects.toBeInstanceOf(InvalidKeyError)
    await expect(
      client.fetch('http://api.test/x', { ...post(), headers: { 'idempotency-key': '"one"' } }, { key: 'two' }),
    ).rejects.toThrow(/option "key" differs/)
    expect(sent).toHaveLength(0)
  })
})

describe('what is retried', () => {
  it.each([408, 425, 429, 502, 503, 504])('retries %i', async (status) => {
    const { fetch, sent } = scriptedFetch([status, 201])
    const result = await createClient({ fetch, ...fast }).fetch('http://api.test/x', post())
    expect(result.response.status).toBe(201)
    expect(result.attempts).toBe(2)
    expect(sent).toHaveLength(2)
  })

  const conflict = (problem: Record<string, unknown>, headers: Record<string, string> = {}) => ({
    status: 409,
    headers: { 'content-type': 'application/problem+json', ...headers },
    body: JSON.stringify({ status: 409, ...problem }),
  })

  it.each<[string, Record<string, unknown>, ClientOptions]>([
    ['idem\'s in-flight, by its code, whatever the type', { type: 'https://docs.example.com/errors#in-flight', code: 'in-flight' }, {}],
    ['idem\'s lease-lost, by its code', { type: 'https://docs.example.com/errors#lease-lost', code: 'lease-lost' }, {}],
    ['idem\'s default in-flight type, without a code', { type: 'urn:idem:problem#in-flight' }, {}],
    ['a type listed in inFlightTypes', { type: 'https://other.example/problems/busy' }, { inFlightTypes: ['https://other.example/problems/busy'] }],
  ])('retries a 409 that says the key is in flight: %s', async (_, problem, options) => {
    const { fetch, sent } = scriptedFetch([conflict(problem), 201])
    const retries: RetryEvent[] = []
    const result = await createClient({ fetch, ...fast, ...options, onRetry: (e) => retries.push(e) }).fetch('http://api.test/x', post())
    expect(result).toMatchObject({ attempts: 2, replayed: false })
    expect(retries).toMatchObject([{ attempt: 1, reason: 'status', status: 409 }])
    expect(sent).toHaveLength(2)
  })

  it.each<[string, Record<string, unknown>, ClientOptions]>([
    ['a route\'s own conflict', { type: 'https://api.test/problems#email-taken', code: 'email-taken' }, {}],
    ['a type that only looks like idem\'s', { type: 'urn:idem:problem#in-flight-ish' }, {}],
    ['idem\'s default type, when inFlightTypes leaves it out', { type: 'urn:idem:problem#in-flight' }, { inFlightTypes: [] }],
    ['no problem body at all', {}, {}],
  ])('returns any other 409 at once, not retryable: %s', async (_, problem, options) => {
    const { fetch, sent } = scriptedFetch([conflict(problem), 201])
    const error = await createClient({ fetch, ...fast, ...options }).fetch('http://api.test/x', post()).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ProblemError)
    expect(error).toMatchObject({ status: 409, attempts: 1, retryable: false, replayed: false })
    expect(sent).toHaveLength(1)
  })

  it.each<[number, Record<string, unknown>]>([
    [409, { code: 'email-taken' }],
    [409, { code: 'in-flight' }],
    [429, {}],
    [503, {}],
    [502, {}],
    [408, {}],
  ])('returns a replayed %i at once, not retryable: a stored answer is the same on every retry (%j)', async (status, problem) => {
    const { fetch, sent } = scriptedFetch([
      { status, headers: { 'content-type': 'application/problem+json', 'idempotent-replayed': 'true', 'retry-after': '0' }, body: JSON.stringify({ status, ...problem }) },
      201,
    ])
    const error = await createClient({ fetch, ...fast }).fetch('http://api.test/x', post()).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ProblemError)
    expect(error).toMatchObject({ status, attempts: 1, retryable: false, replayed: true })
    expect(sent).toHaveLength(1)
  })

  it('retries network errors', async () => {
    const retries: RetryEvent[] = []
    const { fetch } = scriptedFetch([{ throw: networkError() }, 201])
    const result = await createClient({ fetch, ...fast, onRetry: (e) => retries.push(e) }).fetch('http://api.test/x', post())
    expect(result.attempts).toBe(2)
    expect(retries).toMatchObject([{ attempt: 1, reason: 'network', key: result.key }])
    expect(retries[0]?.error).toBeInstanceOf(TypeError)
  })

  it.each([400, 401, 403, 404, 409, 410, 412, 413, 415, 422, 500, 501])('never retries %i: it becomes a ProblemError', async (status) => {
    const { fetch, sent } = scriptedFetch([status, 201])
    const error = await createClient({ fetch, ...fast }).fetch('http://api.test/x', post()).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ProblemError)
    expect(error).toMatchObject({ status, attempts: 1, retryable: false })
    expect(sent).toHaveLength(1)
  })

  it('parses problem+json into the error: type, title, detail, instance, code', async () => {
    const problem = {
      type: 'urn:idem:problem#fingerprint-mismatch',
      title: 'Idempotency-Key reused with a different request',
      status: 422,
      detail: 'This key was first used with another body',
      instance: '/orders',
    }
    const { fetch } = scriptedFetch([{ status: 422, headers: { 'content-type': 'application/problem+json' }, body: JSON.stringify(problem) }])
    const error = (await createClient({ fetch }).fetch('http://api.test/orders', post(), { key: 'k1' }).catch((e: unknown) => e)) as ProblemError
    expect(error).toBeInstanceOf(ProblemError)
    expect(error).toMatchObject({ ...problem, code: 'fingerprint-mismatch', key: 'k1', attempts: 1, replayed: false })
    expect(error.problem).toEqual(problem)
    expect(error.message).toContain('HTTP 422 Idempotency-Key reused with a different request: This key was first used with another body')
  })

  it('takes an explicit `code` member over the type fragment, and copes with bodies that are not problems', async () => {
    const { fetch } = scriptedFetch([
      { status: 400, headers: { 'content-type': 'application/problem+json' }, body: '{"type":"https://x.test/p#a","code":"missing-key"}' },
      { status: 404, headers: { 'content-type': 'text/html' }, body: '<h1>Not found</h1>' },
    ])
    const client = createClient({ fetch })
    await expect(client.fetch('http://api.test/x', post())).rejects.toMatchObject({ status: 400, code: 'missing-key' })
    await expect(client.fetch('http://api.test/x', post())).rejects.toMatchObject({
      status: 404,
      type: 'about:blank',
      code: undefined,
      problem: {},
      body: '<h1>Not found</h1>',
    })
  })

  it('stops after maxAttempts with the last answer, marked retryable', async () => {
    const { fetch, sent } = scriptedFetch([503])
    const error = await createClient({ fetch, ...fast, maxAttempts: 3 }).fetch('http://api.test/x', post()).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ProblemError)
    expect(error).toMatchObject({ status: 503, attempts: 3, retryable: true })
    expect(sent).toHaveLength(3)
  })

  it('stops after maxAttempts of network errors with RetriesExhaustedError carrying the key and the last cause', async () => {
    const { fetch, sent } = scriptedFetch([{ throw: networkError() }])
    const error = (await createClient({ fetch, ...fast, maxAttempts: 4 }).fetch('http://api.test/x', post()).catch((e: unknown) => e)) as RetriesExhaustedError
    expect(error).toBeInstanceOf(RetriesExhaustedError)
    expect(error.attempts).toBe(4)
    expect(error.key).toBe(unquote(sent[0]?.key ?? null))
    expect(error.cause).toBeInstanceOf(TypeError)
    expect(error.message).toMatch(/fetch failed: other side closed/)
  })
})

describe('the answer', () => {
  it('reports a replay, and returns the body buffered', async () => {
    const { fetch } = scriptedFetch([{ throw: networkError() }, { status: 201, headers: { 'idempotent-replayed': 'true' }, body: '{"id":7}' }])
    const result = await createClient({ fetch, ...fast }).fetch('http://api.test/x', post())
    expect(result).toMatchObject({ attempts: 2, replayed: true })
    expect(result.response.status).toBe(201)
    expect(await result.response.json()).toEqual({ id: 7 })
  })

  it('is not a replay without the header; 204 has no body', async () => {
    const { fetch } = scriptedFetch([204])
    const result = await createClient({ fetch }).fetch('http://api.test/x', { method: 'DELETE' })
    expect(result.replayed).toBe(false)
    expect(result.response.status).toBe(204)
    expect(result.response.body).toBeNull()
  })

  it('retries a response whose body breaks off half-way, like any lost response', async () => {
    let calls = 0
    const fetch = async (): Promise<Response> => {
      calls++
      if (calls > 1) return new Response('{"id":1}', { status: 201 })
      const broken = new ReadableStream<Uint8Array>({
        pull(controller) {
          controller.enqueue(new TextEncoder().encode('{"id":'))
          controller.error(new TypeError('terminated'))
        },
      })
      return new Response(broken, { status: 201 })
    }
    const result = await createClient({ fetch, ...fast }).fetch('http://api.test/x', post())
    expect(result.attempts).toBe(2)
    expect(await result.response.json()).toEqual({ id: 1 })
  })
})

describe('the body is sent whole on every attempt', () => {
  it('buffers a one-shot ReadableStream once', async () => {
    const { fetch, sent } = scriptedFetch([503, 503, 201])
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('{"a":'))
        controller.enqueue(new TextEncoder().encode('1}'))
        controller.close()
      },
    })
    await createClient({ fetch, ...fast }).fetch('http://api.test/x', { method: 'POST', body: stream })
    expect(sent.map((s) => s.body)).toEqual(['{"a":1}', '{"a":1}', '{"a":1}'])
  })

  it('keeps a multipart boundary and the bytes identical across attempts', async () => {
    const { fetch, sent } = scriptedFetch([503, 201])
    const form = new FormData()
    form.set('name', 'Ada')
    await createClient({ fetch, ...fast }).fetch('http://api.test/x', { method: 'POST', body: form })
    expect(sent[0]?.contentType).toMatch(/^multipart\/form-data; boundary=/)
    expect(sent[1]?.contentType).toBe(sent[0]?.contentType)
    expect(sent[1]?.body).toBe(sent[0]?.body)
  })

  it("reads a Request's body from a clone, leaving the caller's Request unread", async () => {
    const { fetch, sent } = scriptedFetch([502, 201])
    const request = new Request('http://api.test/x', { method: 'PUT', body: 'payload', headers: { 'x-trace': 't1' } })
    await createClient({ fetch, ...fast }).fetch(request)
    expect(sent.map((s) => [s.method, s.body])).toEqual([['PUT', 'payload'], ['PUT', 'payload']])
    expect(request.bodyUsed).toBe(false)
  })

  it('rejects a body that was already read, with a clear TypeError and nothing sent', async () => {
    const { fetch, sent } = scriptedFetch([201])
    const request = new Request('http://api.test/x', { method: 'POST', body: 'once' })
    await request.text()
    await expect(createClient({ fetch }).fetch(request)).rejects.toThrow(/already read or its stream is locked/)
    const locked = new ReadableStream()
    locked.getReader()
    await expect(createClient({ fetch }).fetch('http://api.test/x', { method: 'POST', body: locked })).rejects.toThrow(TypeError)
    expect(sent).toHaveLength(0)
  })
})

describe('timeouts, deadline and cancel', () => {
  it('gives up on a hung attempt after attemptTimeoutMs and retries', async () => {
    const retries: RetryEvent[] = []
    const { fetch, sent } = scriptedFetch(['hang', 201])
    const result = await createClient({ fetch, ...fast, attemptTimeoutMs: 20, onRetry: (e) => retries.push(e) }).fetch('http://api.test/x', post())
    // The first attempt hangs; the next answers at once, unless a busy machine holds it past 20 ms too.
    expect(result.attempts).toBeGreaterThanOrEqual(2)
    expect(new Set(sent.map((s) => s.key))).toEqual(new Set([sent[0]?.key]))
    expect(retries).toHaveLength(result.attempts - 1)
    for (const retry of retries) expect((retry.error as DOMException).name).toBe('TimeoutError')
    expect(retries.map((r) => r.reason)).toEqual(retries.map(() => 'timeout'))
  })

  it('ends a call that outlives its deadline with DeadlineExceededError', async () => {
    const { fetch, sent } = scriptedFetch(['hang'])
    // Long enough that the first attempt is surely sent before it (30 ms was once not, under a loaded CI machine).
    const error = (await createClient({ fetch, attemptTimeoutMs: 60_000, deadlineMs: 1_000 }).fetch('http://api.test/x', post()).catch((e: unknown) => e)) as DeadlineExceededError
    expect(error).toBeInstanceOf(DeadlineExceededError)
    expect(error.attempts).toBe(1)
    expect(error.key).toBe(unquote(sent[0]?.key ?? null))
    expect(sent).toHaveLength(1)
  })

  it('does not sleep past the deadline: a backoff that would end after it stops the call', async () => {
    const { fetch, sent } = scriptedFetch([{ throw: networkError() }])
    const error = await createClient({ fetch, backoff: { baseMs: 60_000, maxMs: 60_000 }, random: () => 0.9, deadlineMs: 1_000 })
      .fetch('http://api.test/x', post())
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(DeadlineExceededError)
    expect(sent).toHaveLength(1)
  })

  it('even a custom fetch that ignores its signal cannot hold a call past its deadline', async () => {
    const fetch = (): Promise<Response> => new Promise(() => {})
    await expect(createClient({ fetch, deadlineMs: 30 }).fetch('http://api.test/x', post())).rejects.toBeInstanceOf(DeadlineExceededError)
  })

  it("cancels a backoff sleep the moment the caller's signal aborts", async () => {
    const controller = new AbortController()
    const reason = new Error('user left the page')
    const { fetch, sent } = scriptedFetch([503, 201])
    // The wait would be 60 s (random → 1, base 60 s); the abort lands as soon as it starts.
    const client = createClient({
      fetch,
      backoff: { baseMs: 60_000, maxMs: 60_000 },
      deadlineMs: 120_000,
      random: () => 1,
      onRetry: () => queueMicrotask(() => controller.abort(reason)),
    })
    await expect(client.fetch('http://api.test/x', { ...post(), signal: controller.signal })).rejects.toBe(reason)
    expect(sent).toHaveLength(1)
  })

  it('cancels an attempt in flight, and does not retry it', async () => {
    const controller = new AbortController()
    const { fetch, sent } = scriptedFetch(['hang', 201])
    const call = createClient({ fetch, attemptTimeoutMs: 60_000 }).fetch('http://api.test/x', { ...post(), signal: controller.signal })
    setTimeout(() => controller.abort(), 5)
    const error = await call.catch((e: unknown) => e)
    expect((error as DOMException).name).toBe('AbortError')
    expect(sent).toHaveLength(1)
  })

  it('sends nothing when the signal is already aborted', async () => {
    const { fetch, sent } = scriptedFetch([201])
    await expect(createClient({ fetch }).fetch('http://api.test/x', { ...post(), signal: AbortSignal.abort() })).rejects.toMatchObject({ name: 'AbortError' })
    expect(sent).toHaveLength(0)
  })

  it('does not collect abort listeners on a long-lived caller signal', async () => {
    const { fetch } = scriptedFetch([503, 201])
    const controller = new AbortController()
    let added = 0
    let removed = 0
    const { addEventListener, removeEventListener } = controller.signal
    controller.signal.addEventListener = function (...args: Parameters<AbortSignal['addEventListener']>) {
      added++
      return addEventListener.apply(this, args)
    }
    controller.signal.removeEventListener = function (...args: Parameters<AbortSignal['removeEventListener']>) {
      removed++
      return removeEventListener.apply(this, args)
    }
    const client = createClient({ fetch, ...fast })
    for (let i = 0; i < 20; i++) await client.fetch('http://api.test/x', { ...post(), signal: controller.signal })
    expect(added).toBeGreaterThan(0)
    expect(removed).toBe(added)
  })
})

describe('options are checked at creation', () => {
  it.each<[keyof ClientOptions, unknown]>([
    ['maxAttempts', 0],
    ['maxAttempts', 2.5],
    ['backoff', { baseMs: -1 }],
    ['backoff', { baseMs: Number.NaN }],
    ['backoff', { maxMs: 10 }], // below the default base of 100
    ['backoff', 100],
    ['attemptTimeoutMs', 0],
    ['attemptTimeoutMs', Number.POSITIVE_INFINITY],
    ['deadlineMs', 0],
    ['deadlineMs', '30s'],
    ['random', 0.5],
    ['fetch', 'https://api.test'],
    ['onRetry', true],
    ['inFlightTypes', 'urn:idem:problem#in-flight'],
    ['inFlightTypes', ['']],
  ])('rejects %s = %j with InvalidOptionError naming it', (option, value) => {
    const create = (): unknown => createClient({ [option]: value } as ClientOptions)
    expect(create).toThrow(InvalidOptionError)
    // A nested option is named by its path: option "backoff.baseMs".
    expect(create).toThrow(new RegExp(`option "${option}[".]`))
  })

  it('rejects an unknown option, suggesting the one it resembles', () => {
    const create = (): unknown => createClient({ maxAtempts: 3 } as ClientOptions)
    expect(create).toThrow(InvalidOptionError)
    expect(create).toThrow('createClient: "maxAtempts" is not an option; did you mean "maxAttempts"?')
    expect(() => createClient({ retries: 3 } as ClientOptions)).toThrow(/"retries" is not an option \(known: maxAttempts/)
  })

  it('accepts the smallest sensible values', () => {
    expect(() => createClient({ maxAttempts: 1, backoff: { baseMs: 0, maxMs: 0 }, attemptTimeoutMs: 1, deadlineMs: 1 })).not.toThrow()
  })
})
