import { setTimeout as sleep } from 'node:timers/promises'
import { expect } from 'vitest'
import { createEventStream, type IdemEvent } from '../../../src/core/events.js'
import { body, expectProblem, fresh, quoted, rejected, type ConformanceCase } from './case-kit.js'
import { encodingCases } from './encoding-cases.js'
import { storedAnswerCases } from './stored-answer-cases.js'
import type { Call } from './frontends.js'

// The maxStoredBodyBytes case's events: the warning goes here instead of the console.
const omittedEvents = createEventStream()
// The deadlineMs case's events: its overran event and warnings.
const deadlineEvents = createEventStream()

const INVALID_KEYS: Array<[string, string | string[]]> = [
  ['two header fields', ['"first"', '"second"']],
  ['the same key in two header fields', ['same-key', 'same-key']],
  ['a list', '"a", "b"'],
  ['parameters', '"abc";v=1'],
  ['a control character (tab) in a quoted key', '"ab\tc"'],
  ['a control character (tab) in a bare key', 'ab\tc'],
  ['256 characters', quoted('x'.repeat(256))],
  ['an empty value', ''],
  ['an empty sf-string', '""'],
  ['a non-ASCII character', '"caf\u00e9"'],
  ['an unterminated sf-string', '"abc'],
]

export const conformanceCases: ConformanceCase[] = [
  {
    name: 'a POST without a key is 400 missing-key; nothing runs or is stored',
    run: (t) => rejected(t, { path: '/orders', body: '{}', contentType: 'application/json' }, 400, 'missing-key'),
  },
  ...INVALID_KEYS.map(([what, key]): ConformanceCase => ({
    name: `a key with ${what} is 400 invalid-key; nothing runs or is stored`,
    run: (t) => rejected(t, { path: '/orders', key, body: '{}', contentType: 'application/json' }, 400, 'invalid-key'),
  })),
  {
    name: 'with required: false a request without a key passes through unprotected',
    options: { required: false },
    async run(t) {
      const response = await t.client.send({ path: '/orders', body: 'x' })
      expect(response.status).toBe(201)
      expect(await body(response)).toMatchObject({ protected: false, echo: 'x' })
    },
  },
  {
    name: 'GET and routes outside `routes` pass through without a key',
    options: { routes: ['/orders'] },
    async run(t) {
      const get = await t.client.send({ method: 'GET', path: '/orders' })
      expect(get.status).toBe(200)
      expect(await body(get)).toEqual({ route: '/orders', protected: false })
      const other = await t.client.send({ path: '/other', body: 'y' })
      expect(other.status).toBe(201)
      expect(await body(other)).toMatchObject({ protected: false, echo: 'y' })
      await expectProblem(await t.client.send({ path: '/orders', body: 'y' }), 400, 'missing-key')
    },
  },
  {
    name: 'a replay has the same status and body bytes, the allow-listed headers and Idempotent-Replayed, never Set-Cookie',
    async run(t) {
      const key = fresh()
      const call: Call = { path: '/orders', key: quoted(key), tenant: 'a', contentType: 'application/json', body: '{"amount":5}' }
      const first = await t.client.send(call)
      const firstBytes = new Uint8Array(await first.arrayBuffer())
      expect(first.status).toBe(201)
      expect(first.headers.get('idempotent-replayed')).toBeNull()
      expect(first.headers.getSetCookie()).toHaveLength(2)
      expect(first.headers.get('x-debug')).toBe('private-1')
      expect(JSON.parse(new TextDecoder().decode(firstBytes))).toMatchObject({ echo: '{"amount":5}', protected: true, scope: 'tenant:a' })

      const replay = await t.client.send(call)
      expect(replay.status).toBe(201)
      expect(new Uint8Array(await replay.arrayBuffer())).toEqual(firstBytes)
      expect(replay.headers.get('idempotent-replayed')).toBe('true')
      expect(replay.headers.get('content-type')).toBe(first.headers.get('content-type'))
      expect(replay.headers.get('location')).toBe('/orders/1')
      expect(replay.headers.getSetCookie()).toEqual([])
      expect(replay.headers.get('x-debug')).toBeNull()
      expect(t.state.runs['/orders']).toBe(1)
      expect(await t.backend.countEffects(key)).toBe(1)
      expect(await t.backend.countKeys(key)).toBe(1)
    },
  },
  {
    name: 'Set-Cookie is replayed only when replayHeaders names it',
    options: { replayHeaders: ['content-type', 'Set-Cookie'] },
    async run(t) {
      const call: Call = { path: '/orders', key: fresh(), body: 'a' }
      expect((await t.client.send(call)).status).toBe(201)
      const replay = await t.client.send(call)
      expect(replay.headers.get('idempotent-replayed')).toBe('true')
      expect(replay.headers.getSetCookie()).toEqual(['session=s1; Path=/; HttpOnly', 'theme=dark; Path=/'])
      expect(replay.headers.get('location')).toBeNull()
    },
  },
  {
    name: 'a bare key is accepted and replays; strict mode is off by default',
    async run(t) {
      const call: Call = { path: '/orders', key: fresh(), body: 'b' }
      expect((await t.client.send(call)).status).toBe(201)
      const replay = await t.client.send(call)
      expect(replay.headers.get('idempotent-replayed')).toBe('true')
      expect(t.state.runs['/orders']).toBe(1)
    },
  },
  {
    name: 'strict mode rejects a bare key and accepts an sf-string',
    options: { strict: true },
    async run(t) {
      await rejected(t, { path: '/orders', key: fresh(), body: 'c' }, 400, 'invalid-key')
      expect((await t.client.send({ path: '/orders', key: quoted(fresh()), body: 'c' })).status).toBe(201)
    },
  },
  {
    name: 'JSON with keys in another order and other whitespace replays',
    async run(t) {
      const key = quoted(fresh())
      const json = 'application/json'
      const first = await t.client.send({ path: '/orders', key, contentType: json, body: '{"a":1,"b":{"c":[1,2],"d":"x"}}' })
      const again = await t.client.send({ path: '/orders', key, contentType: json, body: '{ "b" : { "d": "x", "c" : [1, 2] },\n  "a": 1 }' })
      expect(again.status).toBe(201)
      expect(again.headers.get('idempotent-replayed')).toBe('true')
      expect(await again.text()).toBe(await first.text())
      expect(t.state.runs['/orders']).toBe(1)
    },
  },
  {
    name: 'form fields in another order replay',
    async run(t) {
      const key = quoted(fresh())
      const form = 'application/x-www-form-urlencoded'
      await t.client.send({ path: '/orders', key, contentType: form, body: 'a=1&b=2' })
      const again = await t.client.send({ path: '/orders', key, contentType: form, body: 'b=2&a=1' })
      expect(again.headers.get('idempotent-replayed')).toBe('true')
      expect(t.state.runs['/orders']).toBe(1)
    },
  },
  {
    name: 'the same key with another body is 422 fingerprint-mismatch and runs nothing',
    async run(t) {
      const key = quoted(fresh())
      const json = 'application/json'
      expect((await t.client.send({ path: '/orders', key, contentType: json, body: '{"amount":5}' })).status).toBe(201)
      await expectProblem(await t.client.send({ path: '/orders', key, contentType: json, body: '{"amount":6}' }), 422, 'fingerprint-mismatch')
      expect(t.state.runs['/orders']).toBe(1)
    },
  },
  {
    name: 'the same key on another route is 422',
    async run(t) {
      const key = quoted(fresh())
      expect((await t.client.send({ path: '/orders', key, body: 'same' })).status).toBe(201)
      await expectProblem(await t.client.send({ path: '/other', key, body: 'same' }), 422, 'fingerprint-mismatch')
      expect(t.state.runs['/other']).toBeUndefined()
    },
  },
  {
    name: 'the query counts: other query parameters with the same key are 422; the same ones in another order replay',
    async run(t) {
      const key = quoted(fresh())
      expect((await t.client.send({ path: '/orders?dry_run=true&notify=no', key, body: 'same' })).status).toBe(201)
      const reordered = await t.client.send({ path: '/orders?notify=no&dry_run=true', key, body: 'same' })
      expect(reordered.status).toBe(201)
      expect(reordered.headers.get('idempotent-replayed')).toBe('true')
      await expectProblem(await t.client.send({ path: '/orders', key, body: 'same' }), 422, 'fingerprint-mismatch')
      await expectProblem(await t.client.send({ path: '/orders?dry_run=false&notify=no', key, body: 'same' }), 422, 'fingerprint-mismatch')
      expect(t.state.runs['/orders']).toBe(1)
    },
  },
  {
    name: 'repeated query parameters in another order are 422 (the order of values counts); the same order replays',
    async run(t) {
      const key = quoted(fresh())
      expect((await t.client.send({ path: '/orders?tier=gold&tier=basic&region=eu', key, body: 'same' })).status).toBe(201)
      // Names may move; the values of one name keep their order.
      const moved = await t.client.send({ path: '/orders?region=eu&tier=gold&tier=basic', key, body: 'same' })
      expect(moved.headers.get('idempotent-replayed')).toBe('true')
      await expectProblem(await t.client.send({ path: '/orders?tier=basic&tier=gold&region=eu', key, body: 'same' }), 422, 'fingerprint-mismatch')
      expect(t.state.runs['/orders']).toBe(1)
    },
  },
  {
    name: 'repeated form fields in another order are 422 (the order of values counts); the same order replays',
    async run(t) {
      const key = quoted(fresh())
      const form = 'application/x-www-form-urlencoded'
      expect((await t.client.send({ path: '/orders', key, contentType: form, body: 'tier=gold&tier=basic&region=eu' })).status).toBe(201)
      const moved = await t.client.send({ path: '/orders', key, contentType: form, body: 'region=eu&tier=gold&tier=basic' })
      expect(moved.headers.get('idempotent-replayed')).toBe('true')
      await expectProblem(await t.client.send({ path: '/orders', key, contentType: form, body: 'tier=basic&tier=gold&region=eu' }), 422, 'fingerprint-mismatch')
      expect(t.state.runs['/orders']).toBe(1)
    },
  },
  {
    name: 'query and form values whose escapes are not UTF-8 are compared as sent: %E9 and %E8 are two requests',
    async run(t) {
      const key = quoted(fresh())
      const form = 'application/x-www-form-urlencoded'
      expect((await t.client.send({ path: '/orders?name=Ren%E9', key, contentType: form, body: 'city=K%F6ln' })).status).toBe(201)
      const again = await t.client.send({ path: '/orders?name=Ren%E9', key, contentType: form, body: 'city=K%F6ln' })
      expect(again.headers.get('idempotent-replayed')).toBe('true')
      // Decoded as UTF-8, each of these escapes is U+FFFD: as text they would be one request.
      await expectProblem(await t.client.send({ path: '/orders?name=Ren%E8', key, contentType: form, body: 'city=K%F6ln' }), 422, 'fingerprint-mismatch')
      await expectProblem(await t.client.send({ path: '/orders?name=Ren%E9', key, contentType: form, body: 'city=K%F5ln' }), 422, 'fingerprint-mismatch')
      expect(t.state.runs['/orders']).toBe(1)
    },
  },
  {
    name: 'a multipart FormData sent again (a fresh boundary) replays; the same key with a changed part is 422',
    async run(t) {
      const key = fresh()
      const upload = (bytes: number[], filename = 'scan.pdf'): FormData => {
        const form = new FormData()
        form.append('claim', 'C-1')
        form.append('document', new Blob([new Uint8Array(bytes)], { type: 'application/pdf' }), filename)
        return form
      }
      const form = upload([0x25, 0x50, 0x44, 0x46, 0xff, 0x00, 0xfe])
      // Each send encodes the form afresh: the boundary is another one every time.
      const boundary = () => new Response(form).headers.get('content-type')
      expect(boundary()).toMatch(/^multipart\/form-data; boundary=/)
      expect(boundary()).not.toBe(boundary())

      const first = await t.client.send({ path: '/orders', key: quoted(key), body: form })
      expect(first.status).toBe(201)
      const firstBytes = new Uint8Array(await first.arrayBuffer())
      const again = await t.client.send({ path: '/orders', key: quoted(key), body: form })
      expect(again.status).toBe(201)
      expect(again.headers.get('idempotent-replayed')).toBe('true')
      expect(new Uint8Array(await again.arrayBuffer())).toEqual(firstBytes)

      await expectProblem(await t.client.send({ path: '/orders', key: quoted(key), body: upload([0x25, 0x50, 0x44, 0x46, 0xff, 0x00, 0xfd]) }), 422, 'fingerprint-mismatch')
      await expectProblem(await t.client.send({ path: '/orders', key: quoted(key), body: upload([0x25, 0x50, 0x44, 0x46, 0xff, 0x00, 0xfe], 'other.pdf') }), 422, 'fingerprint-mismatch')
      expect(t.state.runs['/orders']).toBe(1)
      expect(await t.backend.countEffects(key)).toBe(1)
    },
  },
  {
    name: 'the same key with another method is 422',
    async run(t) {
      const key = quoted(fresh())
      expect((await t.client.send({ path: '/orders', key, body: 'same' })).status).toBe(201)
      await expectProblem(await t.client.send({ method: 'PATCH', path: '/orders', key, body: 'same' }), 422, 'fingerprint-mismatch')
      expect(t.state.runs['/orders']).toBe(1)
    },
  },
  {
    name: 'a duplicate of a request still running is 409 in-flight with Retry-After; nothing else runs',
    async run(t) {
      const key = quoted(fresh())
      const first = t.client.send({ path: '/slow', key, body: 'slow' })
      await t.state.slowEntered.promise
      const second = await t.client.send({ path: '/slow', key, body: 'slow' })
      await expectProblem(second, 409, 'in-flight')
      expect(second.headers.get('retry-after')).toBe('1')
      t.state.gate.open()
      expect((await first).status).toBe(201)
      const retry = await t.client.send({ path: '/slow', key, body: 'slow' })
      expect(retry.headers.get('idempotent-replayed')).toBe('true')
      expect(t.state.runs['/slow']).toBe(1)
    },
  },
  {
    name: 'with wait, a duplicate waits for the first request and replays its response',
    options: { waitMs: 20_000 },
    async run(t) {
      const key = quoted(fresh())
      const first = t.client.send({ path: '/slow', key, body: 'w' })
      await t.state.slowEntered.promise
      const second = t.client.send({ path: '/slow', key, body: 'w' })
      await until(() => t.state.scopeCalls >= 2)
      // Give the duplicate time to reach the key's lock; the outcome is the same if it has not.
      await sleep(50)
      t.state.gate.open()
      const [a, b] = await Promise.all([first, second])
      expect(a.status).toBe(201)
      expect(b.status).toBe(201)
      expect(b.headers.get('idempotent-replayed')).toBe('true')
      expect(await b.text()).toBe(await a.text())
      expect(t.state.runs['/slow']).toBe(1)
    },
  },
  {
    name: 'a route still running at deadlineMs is answered 503 overran with Retry-After and named in the log; its late effect and answer are not stored, and the retry runs (SQLite, which cannot end it, keeps it and says so)',
    // The retry runs under the same deadline, so it is a second: a loaded machine finishes one write well within it.
    options: { deadlineMs: 1_000, waitMs: 20_000, events: deadlineEvents },
    async run(t) {
      const heard: IdemEvent[] = []
      t.cleanup.push(deadlineEvents.subscribe((event) => heard.push(event)))
      const warned = (code: string): boolean => heard.some((event) => event.type === 'warning' && event.code === code)
      const key = fresh()
      const first = t.client.send({ path: '/slow', key: quoted(key), body: 's' })
      if (t.backend.name === 'sqlite') {
        // One connection for every transaction: a late write cannot be fenced off, so the
        // transaction stays until the route ends, and the deadline is only reported.
        await until(() => warned('overran-held'))
        t.state.gate.open()
        expect((await first).status).toBe(201)
        const replay = await t.client.send({ path: '/slow', key: quoted(key), body: 's' })
        expect(replay.headers.get('idempotent-replayed')).toBe('true')
        expect(await t.backend.countEffects(key)).toBe(1)
        return
      }
      const answer = await first
      await expectProblem(answer, 503, 'overran')
      expect(answer.headers.get('retry-after')).toBe('1')
      expect(heard).toContainEqual({ type: 'http', outcome: 'overran', method: 'POST', status: 503, path: '/slow' })
      expect(heard.some((event) => event.type === 'warning' && event.code === 'route-overran' && event.message.includes('POST /slow'))).toBe(true)
      // The route goes on past the deadline: its effect and its answer come too late.
      t.state.gate.open()
      const retry = await t.client.send({ path: '/slow', key: quoted(key), body: 's' })
      expect(retry.status).toBe(201)
      expect(retry.headers.get('idempotent-replayed')).toBeNull()
      expect(t.state.runs['/slow']).toBe(2)
      expect(await t.backend.countEffects(key)).toBe(1)
      expect(await t.backend.countKeys(key)).toBe(1)
    },
  },
  {
    name: 'an unreachable store is 503 store-unavailable with Retry-After, and nothing runs',
    options: { storeDown: true },
    async run(t) {
      const response = await t.client.send({ path: '/orders', key: quoted(fresh()), body: 'd' })
      const problem = await expectProblem(response, 503, 'store-unavailable')
      // The store can also fail after a route ran (storing its answer): the text never says nothing ran.
      expect(problem.detail).not.toMatch(/nothing (was |has been )?(run|done)|was not run/i)
      expect(response.headers.get('retry-after')).toBe('1')
      expect(t.state.runs['/orders']).toBeUndefined()
    },
  },
  ...(
    [
      ['/fail', 500, 'a 5xx'],
      ['/busy', 429, 'a 429 (transient)'],
    ] as const
  ).map(
    ([path, status, what]): ConformanceCase => ({
      name: `${what} is not stored: its effect is rolled back (leased: kept once) and the retry runs again`,
      async run(t) {
        const key = fresh()
        expect((await t.client.send({ path, key: quoted(key), body: 'e' })).status).toBe(status)
        const retry = await t.client.send({ path, key: quoted(key), body: 'e' })
        expect(retry.status).toBe(status)
        expect(retry.headers.get('idempotent-replayed')).toBeNull()
        expect(t.state.runs[path]).toBe(2)
        expect(await t.backend.countEffects(key)).toBe(t.backend.rollsBack ? 0 : 1)
        expect(await t.backend.countKeys(key)).toBe(0)
      },
    }),
  ),
  {
    name: 'a non-transient 4xx is stored and replayed',
    async run(t) {
      const call: Call = { path: '/gone', key: quoted(fresh()), body: 'f' }
      expect((await t.client.send(call)).status).toBe(404)
      const replay = await t.client.send(call)
      expect(replay.status).toBe(404)
      expect(replay.headers.get('idempotent-replayed')).toBe('true')
      expect(t.state.runs['/gone']).toBe(1)
    },
  },
  {
    name: 'a route that throws answers 500, leaves no key and no effect (leased: its effect once), and its retry runs',
    async run(t) {
      const key = fresh()
      expect((await t.client.send({ path: '/throw', key: quoted(key), body: 'g' })).status).toBe(500)
      expect(await t.backend.countEffects(key)).toBe(t.backend.rollsBack ? 0 : 1)
      expect(await t.backend.countKeys(key)).toBe(0)
      expect((await t.client.send({ path: '/throw', key: quoted(key), body: 'g' })).status).toBe(500)
      expect(t.state.runs['/throw']).toBe(2)
    },
  },
  {
    name: 'a body over maxBodyBytes is 413 body-too-large, sent whole or streamed; one at the limit passes',
    options: { maxBodyBytes: 1024 },
    async run(t) {
      const big = 'x'.repeat(4096)
      await rejected(t, { path: '/orders', key: quoted(fresh()), body: big }, 413, 'body-too-large')
      await rejected(t, { path: '/orders', key: quoted(fresh()), body: big, stream: true }, 413, 'body-too-large')
      const atLimit = await t.client.send({ path: '/orders', key: quoted(fresh()), body: 'y'.repeat(1024), stream: true })
      expect(atLimit.status).toBe(201)
      expect(((await body(atLimit)).echo as string).length).toBe(1024)
    },
  },
  {
    name: 'a response over maxStoredBodyBytes is sent whole and stored without its body: the replay has its status and headers, Idempotent-Body-Omitted and no body; one at the limit replays whole',
    options: { maxStoredBodyBytes: 1000, events: omittedEvents },
    async run(t) {
      const warnings: IdemEvent[] = []
      const stop = omittedEvents.subscribe((event) => event.type === 'warning' && warnings.push(event))
      t.cleanup.push(stop)
      const key = fresh()
      const over: Call = { path: '/big', key: quoted(key), body: '1001' }
      const first = await t.client.send(over)
      expect(first.status).toBe(201)
      expect(await first.text()).toBe('x'.repeat(1001))
      expect(first.headers.get('idempotent-body-omitted')).toBeNull()
      const replay = await t.client.send(over)
      expect(replay.status).toBe(201)
      expect(replay.headers.get('idempotent-replayed')).toBe('true')
      expect(replay.headers.get('idempotent-body-omitted')).toBe('true')
      expect(replay.headers.get('location')).toBe('/big/1')
      // The headers that describe the body are left out with it.
      expect(replay.headers.get('content-type')).toBeNull()
      expect(await replay.text()).toBe('')
      expect(t.state.runs['/big']).toBe(1)
      expect(await t.backend.countEffects(key)).toBe(1)
      expect(warnings).toEqual([expect.objectContaining({ code: 'stored-body-omitted', source: 'idempotency' })])

      const atLimit: Call = { path: '/big', key: quoted(fresh()), body: '1000' }
      const whole = await (await t.client.send(atLimit)).text()
      const again = await t.client.send(atLimit)
      expect(again.headers.get('idempotent-replayed')).toBe('true')
      expect(again.headers.get('idempotent-body-omitted')).toBeNull()
      expect(again.headers.get('content-type')).toBe('text/plain; charset=utf-8')
      expect(await again.text()).toBe(whole)
      expect(whole).toHaveLength(1000)
    },
  },
  {
    name: 'tenants are isolated: one key in two scopes runs twice and each sees only its own response',
    async run(t) {
      const key = fresh()
      const call = (tenant: string): Call => ({ path: '/orders', key: quoted(key), tenant, body: 'same body' })
      const a = await body(await t.client.send(call('a')))
      const b = await body(await t.client.send(call('b')))
      expect(a).toMatchObject({ scope: 'tenant:a', run: 1 })
      expect(b).toMatchObject({ scope: 'tenant:b', run: 2 })
      const replayA = await t.client.send(call('a'))
      const replayB = await t.client.send(call('b'))
      expect(replayA.headers.get('idempotent-replayed')).toBe('true')
      expect(await body(replayA)).toEqual(a)
      expect(await body(replayB)).toEqual(b)
      expect(await t.backend.countEffects(key)).toBe(2)
    },
  },
  // A principal decoded from JSON (a token's claim) may hold a lone surrogate; stored as
  // UTF-8 it would become "tenant:\uFFFD", the scope of every other such tenant.
  ...([
    ['not well-formed Unicode', 'tenant:\ud800', /"scope" is not well-formed UTF-16/],
    ['empty', '', /"scope" is empty/],
  ] as const).map(([what, scope, detail]): ConformanceCase => ({
    name: `a scope that is ${what} is a 400 invalid-key problem naming the scope: nothing runs or is stored`,
    options: { scope: () => scope },
    async run(t) {
      const call: Call = { path: '/orders', key: quoted(fresh()), body: 'x' }
      const keysBefore = await t.backend.countKeys()
      const problem = await expectProblem(await t.client.send(call), 400, 'invalid-key')
      expect(problem.detail).toMatch(detail)
      expect(t.state.runs[call.path]).toBeUndefined()
      expect(await t.backend.countKeys()).toBe(keysBefore)
    },
  })),
  {
    name: '100 concurrent identical requests with a new key: the route runs once; the rest get 409 or the original',
    async run(t) {
      const call: Call = { path: '/slow', key: quoted(fresh()), contentType: 'application/json', body: '{"n":100}' }
      let answered = 0
      const all = Array.from({ length: 100 }, () => t.client.send(call).finally(() => answered++))
      await t.state.slowEntered.promise
      // Hold the first until every duplicate has had its answer.
      await until(() => answered >= 99)
      t.state.gate.open()
      const responses = await Promise.all(all)
      const originals = responses.filter((r) => r.status === 201)
      const conflicts = responses.filter((r) => r.status === 409)
      expect(originals.length + conflicts.length).toBe(100)
      expect(originals).toHaveLength(1)
      expect(t.state.runs['/slow']).toBe(1)
      expect(await t.backend.countEffects(call.key!.slice(1, -1) as string)).toBe(1)
    },
  },
  {
    name: '100 concurrent identical requests with wait: the route runs once and every response is the original',
    options: { waitMs: 30_000 },
    async run(t) {
      const call: Call = { path: '/slow', key: quoted(fresh()), contentType: 'application/json', body: '{"n":100}' }
      const all = Array.from({ length: 100 }, () => t.client.send(call))
      await t.state.slowEntered.promise
      await until(() => t.state.scopeCalls >= 100)
      t.state.gate.open()
      const responses = await Promise.all(all)
      const texts = await Promise.all(responses.map((r) => r.text()))
      expect(responses.map((r) => r.status)).toEqual(Array(100).fill(201))
      expect(new Set(texts).size).toBe(1)
      expect(responses.filter((r) => r.headers.get('idempotent-replayed') === 'true')).toHaveLength(99)
      expect(t.state.runs['/slow']).toBe(1)
    },
  },
  ...encodingCases,
  ...storedAnswerCases,
]

/** Polls a condition the test cannot await directly (requests arriving at the server). */
export async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await sleep(2)
}
