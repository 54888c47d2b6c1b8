// The webhook guides (docs/guides/webhooks-*.md): each shows its example verbatim and what
// it prints, and the example runs here: a delivery signed by the provider's own code (or,
// for Shopify and Slack, by their documented algorithm) verifies; a tampered, replayed,
// future, cut-short or wrongly signed one is refused with the check that failed.
import { describe, expect, it } from 'vitest'
import { expectPageShows, expectPageShowsOutput, runExample } from './support.js'

const guides: ReadonlyArray<[string, string[]]> = [
  [
    'stripe',
    [
      'signed 200 {"received":"evt_3PtQ1","type":"payment_intent.succeeded"}',
      'tampered 401 {"check":"no-matching-signature",',
      'replayed 401 {"check":"stale-timestamp",',
    ],
  ],
  [
    'github',
    [
      'signed 200 {"received":"72d3162e-cc78-11e3-81ab-4c9367dc0958","event":"push","ref":"refs/heads/main"}',
      'tampered 401 {"check":"no-matching-signature",',
      'other secret 401 {"check":"no-matching-signature",',
    ],
  ],
  [
    'standard-webhooks',
    [
      'signed 200 {"received":"msg_2KWPBgLlAfxdpx2AI54pPJ85f4W","type":"user.created"}',
      'tampered 401 {"check":"no-matching-signature",',
      'from the future 401 {"check":"future-timestamp",',
    ],
  ],
  [
    'shopify',
    [
      'signed 200 {"received":"b54557e4-bdd9-4b37-8a5f-bf7d70bcd043","topic":"orders/create","order":450789469}',
      'tampered 401 {"check":"no-matching-signature",',
      'cut short 401 {"check":"malformed-header",',
    ],
  ],
  [
    'slack',
    [
      'signed 200 {"received":"Ev0PV52K25","type":"app_mention"}',
      'tampered 401 {"check":"no-matching-signature",',
      'replayed 401 {"check":"stale-timestamp",',
    ],
  ],
]

describe('guides: receiving webhooks with idem/webhooks', () => {
  for (const [provider, starts] of guides) {
    it(`${provider}: the good delivery verifies with its event id; the others are refused by the check that failed`, async () => {
      const guide = `docs/guides/webhooks-${provider}.md`
      const file = `examples/webhooks/${provider}.mjs`
      expectPageShows(guide, file)
      const stdout = await runExample(file)
      const lines = stdout.trim().split('\n')
      expect(lines).toHaveLength(starts.length)
      lines.forEach((line, i) => expect(line.startsWith(starts[i]!), line).toBe(true))
      expectPageShowsOutput(guide, stdout)
    })
  }
})
