import { randomBytes } from 'node:crypto'
import { Redis } from 'ioredis'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { REDIS_URL, testRedis } from '../leased/support.js'
import { idem, inProcess, noStack, type Ran } from './support.js'

const redis = await testRedis('cli-secrets')
const base = new URL(REDIS_URL)
// A Redis without requirepass lets HELLO's AUTH in with any password, so a command that
// prints it is seen to; a test Redis with a password of its own has that one tested.
const SECRET = base.password === '' ? `s3cret@${randomBytes(6).toString('hex')}` : decodeURIComponent(base.password)
const ENCODED = encodeURIComponent(SECRET)
const hostPort = `${base.hostname}:${base.port || '6379'}`

/** The forms in which ioredis takes a password, that this Redis lets in. */
const FORMS: [string, string][] = [
  [':password@', `redis://:${ENCODED}@${hostPort}`],
  ['user:password@', `redis://default:${ENCODED}@${hostPort}/0`],
  ['?password=', `redis://${hostPort}?password=${ENCODED}`],
  // RESP2 sends AUTH, which a Redis without requirepass answers with an error ioredis warns about and lets pass.
  [':password@ over RESP2', `redis://:${ENCODED}@${hostPort}?protocol=2`],
]

function hidden(ran: Ran, form: string): void {
  expect(ran.stdout + ran.stderr, form).not.toContain(SECRET)
  expect(ran.stdout + ran.stderr, form).not.toContain(ENCODED)
  noStack(ran)
}

describe.skipIf(redis === undefined)('idem on Redis shows no password, in any form ioredis takes it', () => {
  const { prefix } = redis!
  afterAll(() => redis?.drop())

  it.each(FORMS)('%s: inspect and prune, text and --json, succeed and print no password', async (form, url) => {
    for (const json of [[], ['--json']]) {
      const inspect = await idem(['inspect', 'acct', 'job-1', '--redis', url, '--prefix', prefix, ...json])
      hidden(inspect, form)
      expect(inspect.code, form).toBe(1)
      const prune = await idem(['prune', '--redis', url, '--prefix', prefix, ...json])
      hidden(prune, form)
      expect(prune.code, form).toBe(0)
    }
    const text = await idem(['inspect', 'acct', 'job-1', '--redis', url, '--prefix', prefix])
    expect(text.stdout).toMatch(/^key "job-1" in scope "acct" \(--redis 'redis:\/\/[^']*\*\*\*[^']*'\)$/m)
    const local = await inProcess(['prune', '--redis', url, '--prefix', prefix, '--json'], true)
    expect([...local.out, ...local.err, ...local.progress].join('\n')).not.toContain(SECRET)
  })

  it.each<[string, string, RegExp]>([
    ['a user the server does not have', `redis://idem-nobody:${ENCODED}@${hostPort}`, /cannot connect to Redis at redis:\/\/idem-nobody:\*\*\*@[^:]+:\d+: WRONGPASS [^\n]*\n {2}fix: check the user and password in the URL/],
    ['a bare userinfo (redis-cli reads it as the password)', `redis://${ENCODED}@${hostPort}`, /cannot connect to Redis at redis:\/\/\*\*\*@[^:]+:\d+: WRONGPASS/],
    ['an unreachable port', `redis://:${ENCODED}@127.0.0.1:1`, /cannot connect to Redis at redis:\/\/:\*\*\*@127\.0\.0\.1:1: connect ECONNREFUSED 127\.0\.0\.1:1/],
    ['an unknown host', `redis://127.0.0.1?password=${ENCODED}`.replace('127.0.0.1', 'idem-no-such-host.invalid'), /cannot connect to Redis at redis:\/\/idem-no-such-host\.invalid\?password=\*\*\*: getaddrinfo (ENOTFOUND|EAI_AGAIN)/],
    ['a URL that does not parse', `redis://:${ENCODED}@${base.hostname}:99999`, /--redis "redis:\/\/:\*\*\*@[^"]+:99999" is not a URL/],
    ['a URL of another kind', `rediss+sentinel://:${ENCODED}@${hostPort}`, /--redis "rediss\+sentinel:\/\/:\*\*\*@[^"]+" is a rediss\+sentinel URL/],
  ])('%s: inspect and prune refuse it, the password masked', async (form, url, said) => {
    for (const command of [['inspect', 's', 'k'], ['prune']]) {
      const ran = await idem([...command, '--redis', url, '--json'])
      hidden(ran, form)
      expect(ran, form).toMatchObject({ code: 2, stdout: '' })
      expect(ran.stderr, form).toMatch(said)
    }
  })

  it("ioredis' own errors and warnings name no password: what Redis says to AUTH without requirepass, and WRONGPASS", async () => {
    const warned: unknown[] = []
    const warn = vi.spyOn(console, 'warn').mockImplementation((...args: unknown[]) => void warned.push(...args))
    const said: string[] = []
    const connect = async (url: string) => {
      const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null })
      client.on('error', (error: Error) => said.push(error.message))
      await client.connect().then(() => client.ping(), (error: Error) => said.push(error.message))
      client.disconnect()
    }
    try {
      await connect(`redis://:${ENCODED}@${hostPort}?protocol=2`)
      await connect(`redis://idem-nobody:${ENCODED}@${hostPort}`)
      await connect(`redis://:${ENCODED}@127.0.0.1:1`)
    } finally {
      warn.mockRestore()
    }
    if (base.password === '') expect(warned.join('\n')).toContain('does not require a password, but a password was supplied')
    expect(said.join('\n')).toContain('WRONGPASS')
    expect(said.join('\n')).toContain('ECONNREFUSED')
    for (const text of [...said, ...warned.map(String)]) {
      expect(text).not.toContain(SECRET)
      expect(text).not.toContain(ENCODED)
    }
  })

  it('Redis itself answers AUTH <password> without requirepass with the words "<password>", not the password', async () => {
    if (base.password !== '') return
    const reply = await redis!.client.call('AUTH', SECRET).then(String, (error: Error) => error.message)
    expect(reply).toMatch(/^ERR AUTH <password> called without any password configured/)
    expect(reply).not.toContain(SECRET)
  })
})
