// The four failures an operator must hear of each print one line by default (JSON on
// stderr), none once silenced, and go to a pino logger when given one: a store that is
// down (503, from the HTTP middleware and from a webhook's inbox), a dead letter, a lost
// lease, a refused webhook. Run in a child process
// (test/ops/support/failures.mjs) with idem as an app imports it, so the lines are what a
// server prints. No line carries a body, a card number or the webhook's secret.
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { createEventStream } from '../../src/core/events.js'
import { InvalidOptionError } from '../../src/core/errors/invalid-option.js'

const run = promisify(execFile)
const root = new URL('../..', import.meta.url).pathname
const ANSWERED = 'answered 503, dead-lettered, lease-lost, webhook 401, webhook 503'

async function failures(mode: 'default' | 'silent' | 'pino'): Promise<{ stdout: string[]; stderr: string[] }> {
  const { stdout, stderr } = await run(process.execPath, [join(root, 'test/ops/support/failures.mjs'), mode], { cwd: root, timeout: 60_000 })
  const lines = (text: string) => text.split('\n').filter((line) => line !== '')
  return { stdout: lines(stdout), stderr: lines(stderr) }
}

const EXPECTED = [
  { event: 'http', code: 'store-unavailable', method: 'POST', path: '/orders', status: 503, error: 'connect ECONNREFUSED 127.0.0.1:1' },
  { event: 'dead-letter', code: 'dead-lettered', source: 'inbox', name: 'orders', key: 'msg-1', attempts: 1 },
  { event: 'lease', code: 'lease-lost', store: 'memory', scope: 'acct_1' },
  { event: 'webhook', code: 'invalid-signature', consumer: 'stripe-webhooks', scheme: 'stripe', check: 'missing-header' },
  { event: 'inbox', code: 'store-unavailable', consumer: 'shop-webhooks', error: 'connect ECONNREFUSED 127.0.0.1:1' },
]

function expectNoSecrets(lines: string[]): void {
  for (const line of lines) {
    expect(line).not.toContain('4242424242424242')
    expect(line).not.toContain('whsec_never_logged')
    expect(line).not.toContain('body never logged')
  }
}

describe('failure lines', () => {
  it('by default: one JSON line on stderr for each failure, with its level, event and code', async () => {
    const { stdout, stderr } = await failures('default')
    expect(stdout).toEqual([ANSWERED])
    const parsed = stderr.map((line) => JSON.parse(line) as Record<string, unknown>)
    expect(parsed.map(({ level, event, code }) => ({ level, event, code }))).toEqual([
      { level: 'error', event: 'http', code: 'store-unavailable' },
      { level: 'error', event: 'dead-letter', code: 'dead-lettered' },
      { level: 'warn', event: 'lease', code: 'lease-lost' },
      { level: 'warn', event: 'webhook', code: 'invalid-signature' },
      { level: 'error', event: 'inbox', code: 'store-unavailable' },
    ])
    parsed.forEach((line, i) => expect(line).toMatchObject(EXPECTED[i]!))
    for (const line of parsed) expect(line.msg).toMatch(/^idem: /)
    expectNoSecrets(stderr)
  })

  it('silenced (idemEvents.setLogger(false)): nothing', async () => {
    const { stdout, stderr } = await failures('silent')
    expect(stdout).toEqual([ANSWERED])
    expect(stderr).toEqual([])
  })

  it("to pino (idemEvents.setLogger(pino())): the same lines, at pino's levels, and nothing on stderr", async () => {
    const { stdout, stderr } = await failures('pino')
    expect(stderr).toEqual([])
    const logged = stdout.filter((line) => line !== ANSWERED).map((line) => JSON.parse(line) as Record<string, unknown>)
    expect(stdout).toContain(ANSWERED)
    expect(logged.map(({ level }) => level)).toEqual([50, 50, 40, 40, 50])
    logged.forEach((line, i) => expect(line).toMatchObject(EXPECTED[i]!))
    expectNoSecrets(stdout)
  })

  it('a logger that is neither false nor { warn, error } is refused, naming the option', () => {
    expect(() => createEventStream({ logger: 'pino' as never })).toThrow(InvalidOptionError)
    expect(() => createEventStream({ logger: { warn() {} } as never })).toThrow(/option "logger" must be false or an object with warn/)
    expect(() => createEventStream().setLogger(null as never)).toThrow(/setLogger: option "logger"/)
  })

  it('a supplied logger gets (fields, message); one that throws changes nothing', () => {
    const lines: Array<[object, string]> = []
    const events = createEventStream({ logger: { warn: (fields, message) => lines.push([fields, message]), error: () => {} } })
    events.fail({ type: 'lease', change: 'lost', store: 'memory', scope: 's' }, { level: 'warn', code: 'lease-lost', message: 'idem: lost', fields: { store: 'memory' } })
    expect(lines).toEqual([[{ event: 'lease', code: 'lease-lost', store: 'memory' }, 'idem: lost']])
    const throwing = createEventStream({ logger: { warn: () => { throw new Error('the log is full') }, error: () => {} } })
    expect(() => throwing.fail({ type: 'lease', change: 'lost', store: 'memory', scope: 's' }, { level: 'warn', code: 'lease-lost', message: 'x' })).not.toThrow()
  })
})
