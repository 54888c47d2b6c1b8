// A provider's handshake (issue 44, item 4), through the public `webhookReceiver` with
// the inbox on Postgres: Slack sends a signed `url_verification` with no event_id when a
// Request URL is saved, and saves it only once its challenge comes back. The verifier
// says it is a handshake and what to reply, once the signature holds; the receiver
// answers it before any event id is read, recording and running nothing. A forged one is
// refused like any delivery. Any verifier can do the same for its provider.
import { createHmac, randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createEventStream, type IdemEvent } from '../../src/core/events.js'
import { webhookReceiver } from '../../src/http/fetch/index.js'
import { slackSignature, type WebhookVerifier } from '../../src/http/webhooks/index.js'
import { createInbox } from '../../src/queue/index.js'
import { testSchema, type TestSchema } from '../support/postgres.js'
import { handledOn } from './support/handled.js'
import { now, slackSign } from './support/providers.js'

const db = await testSchema('idem_webhook_handshakes')
afterAll(() => db?.drop())

const secret = randomBytes(16).toString('hex')
const post = (body: string, headers: Record<string, string>) => new Request('http://localhost/slack/events', { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body })
const signed = (body: string, timestamp = now()) => post(body, { 'x-slack-signature': slackSign(secret, timestamp, body), 'x-slack-request-timestamp': String(timestamp) })
/** What Slack sends when a Request URL is saved (https://api.slack.com/events/url_verification). */
const urlVerification = (challenge: string) => JSON.stringify({ token: 'Jhj5dZrVaK7ZwHHjRyZWjbDl', challenge, type: 'url_verification' })

describe.skipIf(db === undefined)("a provider's handshake is answered by its verifier, nothing recorded (inbox on Postgres)", () => {
  const { store, recorded } = handledOn(db as TestSchema)
  beforeAll(() => store.migrate())
  const consumerNamed = (name: string) => `${name}-${randomBytes(3).toString('hex')}`

  it('Slack: a signed url_verification is answered 200 with its challenge, records and runs nothing, and is reported as a handshake; events then arrive as usual', async () => {
    const consumer = consumerNamed('slack-events')
    const events = createEventStream()
    const seen: IdemEvent[] = []
    events.subscribe((event) => void (event.type === 'webhook' && seen.push(event)))
    const ran: string[] = []
    const receive = webhookReceiver({ inbox: createInbox({ store, consumer }), verify: slackSignature({ secret }), handler: (_tx, event) => void ran.push(event.id), events })
    const challenge = randomBytes(30).toString('base64url')
    const answer = await receive(signed(urlVerification(challenge)))
    expect(answer.status).toBe(200)
    expect(answer.headers.get('content-type')).toBe('application/json')
    expect(await answer.json()).toEqual({ challenge })
    expect(await recorded(consumer)).toBe(0)
    expect(ran).toEqual([])
    const event = JSON.stringify({ type: 'event_callback', event_id: 'Ev0PV52K25', event: { type: 'app_mention', text: 'hi' } })
    expect((await receive(signed(event))).status).toBe(200)
    expect(ran).toEqual(['Ev0PV52K25'])
    expect(seen).toEqual([
      { type: 'webhook', consumer, scheme: 'slack', signature: 'verified', status: 'handshake' },
      { type: 'webhook', consumer, scheme: 'slack', signature: 'verified', status: 'processed' },
    ])
  })

  it('the handshake is answered before any event id is read: an eventId function given is not called for it', async () => {
    const consumer = consumerNamed('slack-own-id')
    const asked: string[] = []
    const receive = webhookReceiver({
      inbox: createInbox({ store, consumer }),
      verify: slackSignature({ secret }),
      eventId: (request) => void asked.push(request.url),
      handler: () => {},
    })
    const challenge = randomBytes(30).toString('base64url')
    expect(await (await receive(signed(urlVerification(challenge)))).json()).toEqual({ challenge })
    expect(asked).toEqual([])
    expect(await recorded(consumer)).toBe(0)
  })

  it('a forged, tampered or replayed url_verification is refused 401 and echoes nothing', async () => {
    const consumer = consumerNamed('slack-forged')
    const receive = webhookReceiver({ inbox: createInbox({ store, consumer }), verify: slackSignature({ secret }), handler: () => {} })
    const challenge = randomBytes(30).toString('base64url')
    const body = urlVerification(challenge)
    const timestamp = now()
    const attempts = [
      post(body, {}),
      post(body, { 'x-slack-signature': slackSign(randomBytes(16).toString('hex'), timestamp, body), 'x-slack-request-timestamp': String(timestamp) }),
      post(body.replace(challenge, `${challenge}x`), { 'x-slack-signature': slackSign(secret, timestamp, body), 'x-slack-request-timestamp': String(timestamp) }),
      signed(body, timestamp - 600),
    ]
    for (const attempt of attempts) {
      const answer = await receive(attempt)
      expect(answer.status).toBe(401)
      expect(await answer.text()).not.toContain(challenge)
    }
    expect(await recorded(consumer)).toBe(0)
  })

  it('any verifier can answer its provider\'s handshake: a hand-written one (shaped like Zoom\'s endpoint.url_validation) is answered as it replies', async () => {
    const key = randomBytes(16).toString('hex')
    const hex = (text: string) => createHmac('sha256', key).update(text).digest('hex')
    const zoomLike: WebhookVerifier = {
      scheme: 'zoom-like',
      verify({ header, body }) {
        const text = new TextDecoder().decode(body)
        if (header('x-zm-signature') !== `v0=${hex(`v0:${String(header('x-zm-request-timestamp'))}:${text}`)}`) return { status: 'refused', check: 'no-matching-signature', detail: 'x-zm-signature does not match' }
        const parsed = JSON.parse(text) as { event: string; payload: { plainToken?: string }; event_id?: string }
        if (parsed.event === 'endpoint.url_validation' && parsed.payload.plainToken !== undefined) {
          const { plainToken } = parsed.payload
          return { status: 'handshake', reply: { contentType: 'application/json', body: JSON.stringify({ plainToken, encryptedToken: hex(plainToken) }) } }
        }
        return { status: 'verified', eventId: parsed.event_id }
      },
    }
    const consumer = consumerNamed('zoom-like')
    const receive = webhookReceiver({ inbox: createInbox({ store, consumer }), verify: zoomLike, handler: () => {} })
    const body = JSON.stringify({ event: 'endpoint.url_validation', payload: { plainToken: 'qgg8vlvZRS6UYooatFL8Aw' } })
    const timestamp = String(now())
    const answer = await receive(post(body, { 'x-zm-request-timestamp': timestamp, 'x-zm-signature': `v0=${hex(`v0:${timestamp}:${body}`)}` }))
    expect(answer.status).toBe(200)
    expect(await answer.json()).toEqual({ plainToken: 'qgg8vlvZRS6UYooatFL8Aw', encryptedToken: hex('qgg8vlvZRS6UYooatFL8Aw') })
    expect(await recorded(consumer)).toBe(0)
  })
})
