// The webhook guides (docs/guides/webhooks-*.md): each shows its example verbatim and what
// it prints, and the example runs here: a delivery signed by the provider's own code (or,
// for Shopify and Slack, by their documented algorithm) is received by webhookReceiver; a
// tampered, replayed, future, cut-short or wrongly signed one is refused 401 with the check
// that failed; Standard Webhooks' headers under Svix's names verify, Shopify's second
// subscription to a topic is a duplicate of the first, Slack's url_verification gets its
// challenge back. Each front end's example (Express, Fastify, Hono, Koa, NestJS, Lambda) is
// run by test/examples/webhooks.test.ts.
import { beforeAll, describe, expect, it } from 'vitest'
import { compiledExamples, expectPageShows, expectPageShowsOutput, runExample } from './support.js'

// The TypeScript examples compile once, before the tests that run them (a minute on a loaded machine).
beforeAll(async () => {
  await compiledExamples()
}, 300_000)

const guides: ReadonlyArray<[string, string[]]> = [
  [
    'stripe',
    [
      'signed 200 {"received":true,"id":"evt_3PtQ1"}',
      'tampered 401 {"type":"urn:idem:problem#invalid-signature",',
      'replayed 401 {"type":"urn:idem:problem#invalid-signature",',
    ],
  ],
  [
    'github',
    [
      'signed 200 {"received":true,"id":"72d3162e-cc78-11e3-81ab-4c9367dc0958"}',
      'tampered 401 {"type":"urn:idem:problem#invalid-signature",',
      'other secret 401 {"type":"urn:idem:problem#invalid-signature",',
    ],
  ],
  [
    'standard-webhooks',
    [
      'signed 200 {"received":true,"id":"msg_2KWPBgLlAfxdpx2AI54pPJ85f4W"}',
      'svix-* headers 200 {"received":true,"id":"msg_2KWPBgN3pbkRXmYjZ0aN7vL1qSe"}',
      'tampered 401 {"type":"urn:idem:problem#invalid-signature",',
      'from the future 401 {"type":"urn:idem:problem#invalid-signature",',
    ],
  ],
  [
    'shopify',
    [
      'signed 200 {"received":true,"id":"98880550-7158-44d4-b7cd-2c97c8a091b5"}',
      'other subscription 200 {"received":true,"id":"98880550-7158-44d4-b7cd-2c97c8a091b5","duplicate":true}',
      'tampered 401 {"type":"urn:idem:problem#invalid-signature",',
      'cut short 401 {"type":"urn:idem:problem#invalid-signature",',
    ],
  ],
  [
    'slack',
    [
      'url_verification 200 {"challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}',
      'signed 200 {"received":true,"id":"Ev0PV52K25"}',
      'tampered 401 {"type":"urn:idem:problem#invalid-signature",',
      'replayed 401 {"type":"urn:idem:problem#invalid-signature",',
    ],
  ],
]

describe('guides: receiving webhooks with idem/webhooks', () => {
  for (const [provider, starts] of guides) {
    it(`${provider}: the good delivery verifies with its event id; the others are refused by the check that failed`, async () => {
      const guide = `docs/guides/webhooks-${provider}.md`
      const file = `examples/webhooks/${provider}.ts`
      expectPageShows(guide, file)
      // Each refused delivery also writes one failure line on stderr.
      const stdout = await runExample(file, [], Array<string>(starts.filter((line) => / 401 /.test(line)).length).fill('invalid-signature'))
      const lines = stdout.trim().split('\n')
      expect(lines).toHaveLength(starts.length)
      lines.forEach((line, i) => expect(line.startsWith(starts[i]!), line).toBe(true))
      expectPageShowsOutput(guide, stdout)
    })
  }
})
