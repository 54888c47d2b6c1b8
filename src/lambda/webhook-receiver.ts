import { webhookReceiving, type WebhookReceiverOptions } from '../http/webhooks/receiver.js'
import { exchangeRequest, httpRequestOf, httpResultOf, neutralAnswer, type LambdaHttpEvent, type LambdaHttpResult } from './http-event.js'

/**
 * A webhook endpoint as a function behind API Gateway (REST APIs, payload 1.0; HTTP APIs,
 * 2.0), a Function URL or an ALB target: the receiver of `idem/fetch`'s
 * `webhookReceiver` (signature checked on the raw bytes, the event recorded through the
 * inbox so the handler runs once, Slack's `url_verification` answered, nothing recorded),
 * with the Lambda event as `event.request`, answered in the event's own format. The raw
 * bytes are the event's `body` as Lambda hands it over: decoded from base64 when
 * `isBase64Encoded`, else its UTF-8. No body parser runs before a function, so nothing
 * needs mounting first; but a REST API passes a body it takes for text as text, so a
 * body that is not UTF-8 arrives changed and fails its signature: list every media type
 * among the API's `binaryMediaTypes`, and every body comes in base64, byte for byte.
 * @throws InvalidOptionError naming the option
 * @example
 * export const handler = webhookReceiver({
 *   inbox: createInbox({ store: postgresStore({ pool }), consumer: 'slack-events' }),
 *   verify: slackSignature({ secret: process.env.SLACK_SIGNING_SECRET! }),
 *   handler: async (tx, event) => { await tx.query('INSERT INTO mentions (event_id) VALUES ($1)', [event.id]) },
 * })
 * @see docs/webhooks.md
 */
export function webhookReceiver<Tx, Body = unknown, Event extends LambdaHttpEvent = LambdaHttpEvent>(options: WebhookReceiverOptions<Tx, Event, Body>): (event: Event) => Promise<LambdaHttpResult> {
  const receive = webhookReceiving('webhookReceiver', options)
  return async function webhookReceiver(event) {
    const request = httpRequestOf(event)
    return httpResultOf(neutralAnswer(await receive(exchangeRequest(request), event)), request)
  }
}
