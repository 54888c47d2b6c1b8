// The rows of the conformance table about what a replay carries of the headers a route
// answered (#44 item 1): one rule when a response is stored and when it is read, so what
// any front end stores, every front end reads back and sends the way its platform can.
import { expect } from 'vitest'
import { createIdem } from '../../../src/core/engine.js'
import { fingerprintRequest } from '../../../src/http/request-fingerprint.js'
import { body, fresh, quoted, type ConformanceCase } from './case-kit.js'
import type { Call } from './frontends.js'

const DISPOSITION = 'attachment; filename="报告.pdf"'

export const storedAnswerCases: ConformanceCase[] = [
  {
    name: 'a header value with a space after it replays without it, never as 500 outcome-unreadable',
    async run(t) {
      const key = fresh()
      const call: Call = { path: '/spaced', key: quoted(key), tenant: 'a', contentType: 'application/json', body: '{}' }
      const first = await t.client.send(call)
      expect(first.status).toBe(201)
      const replay = await t.client.send(call)
      expect([replay.status, replay.headers.get('idempotent-replayed'), replay.headers.get('cache-control')]).toEqual([201, 'true', 'no-store'])
      expect(await body(replay)).toEqual(await body(first))
      expect(t.state.runs['/spaced']).toBe(1)
      expect(await t.backend.countEffects(key)).toBe(1)
    },
  },
  {
    name: 'a row the Lambda front end stored (a space after a value, Unicode text) replays: the value trimmed, the text as its UTF-8 bytes',
    options: { replayHeaders: ['content-type', 'cache-control', 'content-disposition'] },
    async run(t) {
      const key = fresh()
      const call: Call = { path: '/orders', key: quoted(key), tenant: 'a', contentType: 'application/json', body: '{}' }
      const { store, idem } = t.backend.protection()
      const engine = idem ?? createIdem({ store: store! })
      const fingerprint = fingerprintRequest({ method: 'POST', route: '/orders', body: '{}', contentType: 'application/json' })
      const row = { status: 201, v: 2, headers: ['cache-control', 'no-store ', 'content-disposition', DISPOSITION, 'content-type', 'application/json'], text: '{"id":7}' }
      await engine.run({ scope: 'tenant:a', key, fingerprint }, () => row)
      const replay = await t.client.send(call)
      expect([replay.status, replay.headers.get('idempotent-replayed'), replay.headers.get('cache-control')]).toEqual([201, 'true', 'no-store'])
      // The value's bytes, one character each, as Node's client and a Web Headers hold them.
      expect(Buffer.from(replay.headers.get('content-disposition') ?? '', 'latin1').toString('utf8')).toBe(DISPOSITION)
      expect(await body(replay)).toEqual({ id: 7 })
      expect(t.state.runs['/orders']).toBeUndefined()
    },
  },
]
