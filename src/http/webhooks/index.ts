/**
 * `idem/webhooks`: the signature checks of the providers people receive webhooks from,
 * as pure verifiers over a header lookup and the raw body bytes, so any framework or
 * runtime can run them before anything is parsed or recorded.
 */
export type { WebhookCheck, WebhookDelivery, WebhookHandshakeReply, WebhookVerification, WebhookVerifier } from './verifier.js'
export type { WebhookSecrets } from './signing.js'
export { STRIPE_TOLERANCE_MS, stripeSignature, type StripeSignatureOptions } from './stripe.js'
export { githubSignature, type GithubSignatureOptions } from './github.js'
export { STANDARD_WEBHOOKS_TOLERANCE_MS, standardWebhooksSignature, type StandardWebhooksSignatureOptions } from './standard-webhooks.js'
export { shopifySignature, type ShopifySignatureOptions } from './shopify.js'
export { SLACK_TOLERANCE_MS, slackSignature, type SlackSignatureOptions } from './slack.js'
