import { assertKnownOptions, optionNames } from '../../core/errors/option-checks.js'
import { anySignatureMatches, headerOf, hexDigest, refused, secretKeys, verified, type WebhookSecrets } from './signing.js'
import type { WebhookVerifier } from './verifier.js'

/** What `githubSignature` takes: the webhook's secret(s). */
export interface GithubSignatureOptions {
  /** The webhook's secret, as set on the repository, organisation or app; an array of them while one is changed. */
  secret: WebhookSecrets
}

const OPTIONS = optionNames<GithubSignatureOptions>({ secret: true })
const HEADER = 'x-hub-signature-256'

/**
 * Verifies GitHub's `X-Hub-Signature-256` header (`sha256=<hex>`): HMAC-SHA256 under the
 * webhook's secret over the raw body. GitHub signs no timestamp, so there is no window:
 * a replay is caught by its delivery id, `X-GitHub-Delivery` (the event id, the same on
 * GitHub's redeliveries). The SHA-1 `X-Hub-Signature` is not accepted.
 * @throws InvalidOptionError naming the option
 * @example
 * const github = githubSignature({ secret: process.env.GITHUB_WEBHOOK_SECRET! })
 * const verification = github.verify({ header: (name) => request.headers.get(name), body: new Uint8Array(await request.arrayBuffer()) })
 * if (verification.status === 'refused') return new Response(verification.detail, { status: 401 })
 * @see docs/guides/webhooks-github.md
 */
export function githubSignature(options: GithubSignatureOptions): WebhookVerifier {
  const caller = 'githubSignature'
  assertKnownOptions(caller, options, OPTIONS)
  const keys = secretKeys(caller, options.secret, (one) => one)

  return {
    scheme: 'github',
    verify(delivery) {
      const header = headerOf(delivery, HEADER)
      if (header === undefined) return refused('missing-header', 'The X-Hub-Signature-256 header is missing')
      const digest = header.startsWith('sha256=') ? hexDigest(header.slice('sha256='.length)) : undefined
      if (digest === undefined) return refused('malformed-header', 'X-Hub-Signature-256 must be sha256= and 64 hex digits')
      if (!anySignatureMatches(keys, [delivery.body], [digest])) {
        return refused('no-matching-signature', 'X-Hub-Signature-256 does not match the body under the webhook secret')
      }
      return verified(headerOf(delivery, 'x-github-delivery'))
    },
  }
}
