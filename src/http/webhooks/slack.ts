import { assertKnownOptions, optionNames } from '../../core/errors/option-checks.js'
import { anySignatureMatches, assertTolerance, handshake, headerOf, hexDigest, jsonObject, outsideWindow, refused, secretKeys, stringField, verified, type WebhookSecrets } from './signing.js'
import type { WebhookVerification, WebhookVerifier } from './verifier.js'

/** What `slackSignature` takes: the app's signing secret(s) and the timestamp window. */
export interface SlackSignatureOptions {
  /** The app's signing secret (Basic Information → App Credentials); an array of them while one is regenerated. */
  secret: WebhookSecrets
  /** How far `X-Slack-Request-Timestamp` may be from this clock, either way. @default 300_000 (Slack's five minutes) */
  toleranceMs?: number
}

/** Slack's recommended window: five minutes. */
export const SLACK_TOLERANCE_MS = 300_000

const OPTIONS = optionNames<SlackSignatureOptions>({ secret: true, toleranceMs: true })

/**
 * Verifies Slack's `X-Slack-Signature` header (`v0=<hex>`): HMAC-SHA256 under the
 * signing secret over `v0:<X-Slack-Request-Timestamp>:<raw body>`, with the timestamp
 * inside the window. The event id is the Events API's `event_id` when the body is JSON
 * that has one (slash commands and interactions, form-encoded, have none). The signed
 * `url_verification` request Slack sends when a Request URL is saved carries no event:
 * it is answered `handshake`, with its `challenge` as Slack asks.
 * @throws InvalidOptionError naming the option
 * @example
 * const slack = slackSignature({ secret: process.env.SLACK_SIGNING_SECRET! })
 * const verification = slack.verify({ header: (name) => request.headers.get(name), body: new Uint8Array(await request.arrayBuffer()) })
 * if (verification.status === 'refused') return new Response(verification.detail, { status: 401 })
 * @see docs/guides/webhooks-slack.md
 */
export function slackSignature(options: SlackSignatureOptions): WebhookVerifier {
  const caller = 'slackSignature'
  assertKnownOptions(caller, options, OPTIONS)
  const { secret, toleranceMs = SLACK_TOLERANCE_MS } = options
  const keys = secretKeys(caller, secret, (one) => one)
  assertTolerance(caller, toleranceMs)

  return {
    scheme: 'slack',
    verify(delivery) {
      const signature = headerOf(delivery, 'x-slack-signature')
      const timestamp = headerOf(delivery, 'x-slack-request-timestamp')
      if (signature === undefined) return refused('missing-header', 'The X-Slack-Signature header is missing')
      if (timestamp === undefined) return refused('missing-header', 'The X-Slack-Request-Timestamp header is missing')
      const digest = signature.startsWith('v0=') ? hexDigest(signature.slice('v0='.length)) : undefined
      if (digest === undefined) return refused('malformed-header', 'X-Slack-Signature must be v0= and 64 hex digits')
      const outside = outsideWindow(delivery, 'X-Slack-Request-Timestamp', timestamp, toleranceMs)
      if (outside !== undefined) return outside
      if (!anySignatureMatches(keys, ['v0:', timestamp, ':', delivery.body], [digest])) {
        return refused('no-matching-signature', 'X-Slack-Signature does not match the body under the signing secret')
      }
      return eventOrChallenge(jsonObject(delivery.body))
    },
  }
}

/**
 * What a verified Slack request is: the Events API's `url_verification` (Slack saves the
 * Request URL only once it gets the challenge back), or an event with its `event_id`.
 */
function eventOrChallenge(body: object | undefined): WebhookVerification {
  const challenge = stringField(body, 'challenge')
  if (stringField(body, 'type') === 'url_verification' && challenge !== undefined) {
    return handshake('application/json', JSON.stringify({ challenge }))
  }
  return verified(stringField(body, 'event_id'))
}
