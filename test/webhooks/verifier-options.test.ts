// The verifiers' options, checked when a verifier is made: each mistake is an
// InvalidOptionError naming the option, and none shows a secret.
import { randomBytes } from 'node:crypto'
import { Webhook } from 'standardwebhooks'
import Stripe from 'stripe'
import { describe, expect, it } from 'vitest'
import { InvalidOptionError } from '../../src/core/errors/invalid-option.js'
import { githubSignature, shopifySignature, slackSignature, standardWebhooksSignature, stripeSignature } from '../../src/http/webhooks/index.js'
import { BODY, SIGNED_AT, at, refusedBy, verify, whsec } from './support/verify.js'

const stripe = new Stripe('sk_test_not_used_for_calls')

describe('options are checked when a verifier is made, naming the option, never showing a secret', () => {
  const cases: Array<[string, () => unknown, RegExp]> = [
    ['an unknown option', () => stripeSignature({ secret: 'whsec_abc', tolerance: 5 } as never), /stripeSignature: "tolerance" is not an option; did you mean "toleranceMs"\?/],
    ['no secret', () => githubSignature({} as never), /githubSignature: option "secret" must be the signing secret, or an array of 1 to 10/],
    ['an empty list', () => shopifySignature({ secret: [] }), /shopifySignature: option "secret" must be/],
    ['an empty secret in a list', () => slackSignature({ secret: ['s3cr3t-value', ''] }), /slackSignature: option "secret"\[1\] must be a non-empty string/],
    ['a Stripe API key instead of the endpoint secret', () => stripeSignature({ secret: 'sk_live_51Hs3cr3tv4lu3' }), /stripeSignature: option "secret" must be the endpoint's signing secret, which starts with "whsec_"/],
    ['a secret with a trailing newline', () => githubSignature({ secret: 's3cr3t-value\n' }), /githubSignature: option "secret" contains whitespace/],
    ['a Standard Webhooks secret that is not base64', () => standardWebhooksSignature({ secret: 'whsec_s3cr3t!value' }), /standardWebhooksSignature: option "secret" must be "whsec_" and the key in base64/],
    ['an asymmetric Standard Webhooks key', () => standardWebhooksSignature({ secret: 'whpk_s3cr3tvalue' }), /standardWebhooksSignature: option "secret" must be "whsec_"/],
    ['a tolerance under a second', () => stripeSignature({ secret: 'whsec_abc', toleranceMs: 300 }), /stripeSignature: option "toleranceMs" must be a whole number of milliseconds from 1000/],
    ['a tolerance in seconds by mistake, fractional', () => slackSignature({ secret: 'abc', toleranceMs: 1.5e3 + 0.5 }), /slackSignature: option "toleranceMs" must be a whole number/],
  ]
  for (const [what, make, message] of cases) {
    it(what, () => {
      let thrown: unknown
      try {
        make()
      } catch (error) {
        thrown = error
      }
      expect(thrown).toBeInstanceOf(InvalidOptionError)
      expect((thrown as Error).message).toMatch(message)
      expect((thrown as Error).message).not.toMatch(/s3cr3t/)
    })
  }

  it('the tolerance can be set: a Stripe delivery 10 min old verifies with toleranceMs 900_000', () => {
    const secret = `whsec_${randomBytes(16).toString('hex')}`
    const header = stripe.webhooks.generateTestHeaderString({ payload: BODY, secret, timestamp: SIGNED_AT })
    expect(verify(stripeSignature({ secret, toleranceMs: 900_000 }), { 'stripe-signature': header }, BODY, at(SIGNED_AT + 600)).status).toBe('verified')
    expect(refusedBy(verify(stripeSignature({ secret }), { 'stripe-signature': header }, BODY, at(SIGNED_AT + 600)))).toBe('stale-timestamp')
  })

  it('a Standard Webhooks secret without its whsec_ prefix is the same key', () => {
    const secret = whsec()
    const headers = { 'webhook-id': 'msg_1', 'webhook-timestamp': String(SIGNED_AT), 'webhook-signature': new Webhook(secret).sign('msg_1', new Date(SIGNED_AT * 1000), BODY) }
    expect(verify(standardWebhooksSignature({ secret: secret.slice('whsec_'.length) }), headers, BODY).status).toBe('verified')
  })
})
