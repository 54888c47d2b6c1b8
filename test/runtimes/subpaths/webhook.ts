// A Standard Webhooks endpoint (idem/fetch's webhookReceiver, idem/webhooks' verifier)
// whose inbox is idem/dynamodb on DynamoDB Local: deliveries signed by the spec's
// reference library (`standardwebhooks`) on the runtime. The first runs the handler, whose
// write (a count in the table) commits with the event id; the redelivery, signed again a
// second later as a sender's retry is, is answered without running it; a delivery whose
// body changed on the way is refused before anything is recorded.
import { UpdateItemCommand } from '@aws-sdk/client-dynamodb'
import { Webhook } from 'standardwebhooks'
import { webhookReceiver } from 'idem/fetch'
import { dynamodbStore, type DynamoTx } from 'idem/dynamodb'
import { createInbox } from 'idem/queue'
import { standardWebhooksSignature } from 'idem/webhooks'
import { addOne, localDynamo } from './dynamo-client.js'
import { effectCounter, WEBHOOK_ID, type WebhookAnswer, type WebhookResult } from './results.js'
import { reportResult, required, scriptConfig } from './script.js'

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'

await reportResult(async (): Promise<WebhookResult> => {
  const config = scriptConfig()
  const table = required(config, 'table')
  const client = localDynamo(config)
  let runs = 0
  const receive = webhookReceiver<DynamoTx>({
    inbox: createInbox({ store: dynamodbStore({ client, table, timeoutMs: 5_000 }), consumer: 'user-webhooks' }),
    verify: standardWebhooksSignature({ secret: SECRET }),
    handler: (tx, event) => {
      runs++
      tx.write({ Update: addOne(table, effectCounter(event.id)) })
    },
  })
  const payload = JSON.stringify({ type: 'user.created', timestamp: '2026-12-02T01:00:00Z', data: { id: 'user_29w83sxmDNGwOuEthce5gg56FcC' } })
  const deliver = async (sentAt: number, body: string): Promise<WebhookAnswer> => {
    const headers = {
      'content-type': 'application/json',
      'webhook-id': WEBHOOK_ID,
      'webhook-timestamp': String(Math.floor(sentAt / 1000)),
      'webhook-signature': new Webhook(SECRET).sign(WEBHOOK_ID, new Date(sentAt), payload),
    }
    const response = await receive(new Request('https://api.example.com/webhooks/users', { method: 'POST', headers, body }))
    return { status: response.status, replayed: response.headers.get('idempotent-replayed'), body: await response.text() }
  }
  const now = Date.now()
  const first = await deliver(now, payload)
  const redelivery = await deliver(now + 1_000, payload)
  const tampered = await deliver(now, payload.replace('created', 'deleted'))
  client.destroy()
  return { first, redelivery, tampered, runs }
})
