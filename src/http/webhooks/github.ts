import { assertKnownOptions, optionNames } from '../../core/errors/option-checks.js'
import { bodySignatureVerifier, type BodySignatureScheme } from './body-signature.js'
import { headerOf, hexDigest, type WebhookSecrets } from './signing.js'
import type { WebhookVerifier } from './verifier.js'

/** What `githubSignature` takes: the webhook's secret(s). */
export interface GithubSignatureOptions {
  /** The webhook's secret, as set on the repository, organisation or app; an array of them while one is changed. */
  secret: WebhookSecrets
}

const OPTIONS = optionNames<GithubSignatureOptions>({ secret: true })
const GITHUB: BodySignatureScheme = {
  scheme: 'github',
  header: 'X-Hub-Signature-256',
  format: 'sha256= and 64 hex digits',
  secret: 'webhook secret',
  digest: (header) => (header.startsWith('sha256=') ? hexDigest(header.slice('sha256='.length)) : undefined),
  eventId: (delivery) => headerOf(delivery, 'x-github-delivery'),
}

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
  assertKnownOptions('githubSignature', options, OPTIONS)
  return bodySignatureVerifier('githubSignature', GITHUB, options.secret)
}
