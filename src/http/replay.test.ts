import { describe, expect, it } from 'vitest'
import { replayAnswer } from './replay.js'
import { storeResponse } from './stored-response.js'

const bytesOf = (body: Uint8Array | string): Buffer => Buffer.from(body)

describe('rows of format 1 still replay', () => {
  it('with their pairs of headers and base64 body', () => {
    const answer = replayAnswer({
      status: 201,
      headers: [
        ['content-type', 'application/json'],
        ['set-cookie', 'a=1'],
        ['set-cookie', 'b=2'],
      ],
      bodyBase64: Buffer.from('{"id":7}').toString('base64'),
    })
    expect(answer.status).toBe(201)
    expect(answer.headers).toEqual(['content-type', 'application/json', 'set-cookie', 'a=1', 'set-cookie', 'b=2', 'idempotent-replayed', 'true'])
    expect(bytesOf(answer.body).toString()).toBe('{"id":7}')
  })

  it('with an omitted body, and without the marker of one when the row has none', () => {
    const omitted = replayAnswer({ status: 201, headers: [['location', '/r/7']], bodyBase64: '', omittedBodyBytes: 9 })
    expect(omitted.headers).toEqual(['location', '/r/7', 'idempotent-replayed', 'true', 'idempotent-body-omitted', 'true'])
    const older = replayAnswer({ status: 200, headers: [], bodyBase64: Buffer.from('ok').toString('base64') })
    expect(older.headers).not.toContain('idempotent-body-omitted')
  })
})

describe('reading a stored response back', () => {
  it('replays a body of 12 MiB (whose base64 a repeated-group regex could not check), and refuses base64 that is not in groups of four', () => {
    const body = new Uint8Array(12 * 1024 * 1024).fill(0xff)
    const stored = storeResponse(200, [], body)
    expect(bytesOf(replayAnswer(stored).body).byteLength).toBe(body.byteLength)
    for (const base64 of ['AAAAA', 'AAA', 'A===']) {
      expect(() => replayAnswer({ ...stored, base64 })).toThrow(/not base64/)
      expect(() => replayAnswer({ status: 200, headers: [], bodyBase64: base64 })).toThrow(/not base64/)
    }
  })

  it('refuses rows that are not a stored response, rather than guess', () => {
    const valid = { v: 2, status: 200, headers: [], text: 'ok' }
    for (const row of [
      null,
      [],
      { ...valid, status: 42 },
      { ...valid, headers: ['content-type'] },
      { ...valid, headers: ['bad name', 'x'] },
      { ...valid, headers: ['x-a', 'line\nbreak'] },
      { ...valid, text: undefined },
      { ...valid, base64: 'AAAA' },
      { ...valid, omittedBodyBytes: 3 },
      { ...valid, v: 3 },
      { status: 200, headers: [['content-type']], bodyBase64: '' },
    ]) {
      expect(() => replayAnswer(row), JSON.stringify(row)).toThrow(/unreadable|not a valid HTTP field/)
    }
  })
})
