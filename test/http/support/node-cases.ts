// Rows only the front ends on Node's response run (Express 4 and 5, Fastify, NestJS on
// both platforms): there a route answers by ending its response and runs on, so it can
// answer and then fail, or take its reply over. A Fetch, Hono or Lambda route answers
// by returning its Response: it can do neither. A Koa route answers through ctx, which
// Koa sends once every middleware has returned: it can take the response over
// (`ctx.respond = false`), but a throw after setting its answer is a throw before it.
import { expect } from 'vitest'
import { createEventStream, type WarningEvent } from '../../../src/core/events.js'
import { expectProblem, fresh, quoted, type CaseContext, type ConformanceCase } from './case-kit.js'
import { until } from './cases.js'
import type { Call, FrontEnd } from './frontends.js'

/** A row, and the front ends it runs on. */
export interface NodeCase extends ConformanceCase {
  runsOn(frontEnd: FrontEnd['name']): boolean
}

// The rows' warnings go here instead of the console.
const events = createEventStream()

function warnings(t: { cleanup: Array<() => void> }, code: string): WarningEvent[] {
  const heard: WarningEvent[] = []
  t.cleanup.push(events.subscribe((event) => event.type === 'warning' && event.code === code && heard.push(event)))
  return heard
}

/** The first answer (`text`) committed with one effect under `key`; the retry replays it without running the route. */
async function expectCommittedOnce(t: CaseContext, call: Call, key: string, text: string): Promise<void> {
  expect(await t.backend.countEffects(key)).toBe(1)
  expect(await t.backend.countKeys(key)).toBe(1)
  const replay = await t.client.send(call)
  expect(replay.status).toBe(201)
  expect(replay.headers.get('idempotent-replayed')).toBe('true')
  expect(await replay.text()).toBe(text)
  expect(t.state.runs[call.path]).toBe(1)
}

const onNode = (name: FrontEnd['name']): boolean => name === 'express' || name === 'express4' || name === 'fastify' || name.startsWith('nest')
const nestOnFastify = (name: FrontEnd['name']): boolean => name.startsWith('nest') && name.includes('-fastify')
const onKoa = (name: FrontEnd['name']): boolean => name === 'koa' || name === 'koa2'

export const nodeCases: NodeCase[] = [
  {
    name: 'a route that answers 201 and then throws: the client gets that 201, committed with its effect, and the retry replays it; the error is a route-failed-after-answer warning, never a second answer',
    options: { events },
    runsOn: onNode,
    async run(t) {
      const told = warnings(t, 'route-failed-after-answer')
      const key = fresh()
      const call: Call = { path: '/answer-then-throw', key: quoted(key), tenant: 'a', body: 'x' }
      const first = await t.client.send(call)
      expect(first.status).toBe(201)
      // The route's own headers, not the error handler's.
      expect(first.headers.get('content-type')).toMatch(/^application\/json/)
      expect(first.headers.get('location')).toBe('/answer-then-throw/1')
      expect(first.headers.getSetCookie()).toHaveLength(2)
      const text = await first.text()
      expect(JSON.parse(text)).toMatchObject({ route: '/answer-then-throw', run: 1, echo: 'x', protected: true })
      await expectCommittedOnce(t, call, key, text)
      await until(() => told.length > 0)
      expect(told).toHaveLength(1)
      expect(told[0]!.message).toContain('POST /answer-then-throw answered 201, then')
    },
  },
  {
    name: "a route that takes its reply over (Fastify's reply.hijack(), Koa's ctx.respond = false) is refused: 500 route-hijacked, never a 2xx, its effect rolled back and nothing stored; each refusal is a route-hijacked warning naming the route",
    options: { events },
    runsOn: (name) => name === 'fastify' || onKoa(name),
    async run(t) {
      const told = warnings(t, 'route-hijacked')
      const key = fresh()
      const call: Call = { path: '/hijack', key: quoted(key), body: 'h' }
      const how = t.frontEnd === 'fastify' ? 'called reply.hijack()' : 'set ctx.respond = false'
      for (const attempt of [1, 2]) {
        const problem = await expectProblem(await t.client.send(call), 500, 'route-hijacked')
        expect(problem.title).toBe('Route hijacked its reply')
        expect(await t.backend.countEffects(key)).toBe(0)
        expect(await t.backend.countKeys(key)).toBe(0)
        expect(t.state.runs['/hijack']).toBe(attempt)
        expect(told).toHaveLength(attempt)
        expect(told[attempt - 1]!.message).toContain(`POST /hijack ${how}`)
      }
    },
  },
  {
    name: 'a Koa route that sets its 201 and then throws has not answered yet: Koa answers 500, its effect rolls back (leased: kept once), nothing is stored, and the retry runs again',
    runsOn: onKoa,
    async run(t) {
      const key = fresh()
      const call: Call = { path: '/answer-then-throw', key: quoted(key), tenant: 'a', body: 'x' }
      for (const attempt of [1, 2]) {
        const response = await t.client.send(call)
        expect(response.status).toBe(500)
        // Koa's error handling drops what the route set.
        expect(response.headers.get('location')).toBeNull()
        expect(response.headers.getSetCookie()).toEqual([])
        expect(await response.text()).toBe('Internal Server Error')
        expect(t.state.runs['/answer-then-throw']).toBe(attempt)
      }
      expect(await t.backend.countEffects(key)).toBe(t.backend.rollsBack ? 0 : 1)
      expect(await t.backend.countKeys(key)).toBe(0)
    },
  },
  {
    name: "a route that hijacks Fastify's reply under NestJS is held like any other: its 201 commits with its effect and the retry replays it",
    runsOn: nestOnFastify,
    async run(t) {
      const key = fresh()
      const call: Call = { path: '/hijack', key: quoted(key), body: 'h' }
      const first = await t.client.send(call)
      expect(first.status).toBe(201)
      expect(first.headers.get('location')).toBe('/hijack/1')
      await expectCommittedOnce(t, call, key, await first.text())
    },
  },
]
