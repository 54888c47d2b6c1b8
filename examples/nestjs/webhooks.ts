// A Stripe webhook endpoint in a NestJS app, on the Express or the Fastify platform: the
// app is created with rawBody: true, so Nest keeps the bytes its JSON parser read on
// req.rawBody, and the receiver checks the signature on them. The controller builds the
// receiver from the services Nest injects; the handler runs once per Stripe event.
import 'reflect-metadata'
import { Controller, Injectable, Module, Post, Req, Res } from '@nestjs/common'
import { NestFactory } from '@nestjs/core'
import { memoryStore } from 'idem/memory' // for trying it out; Postgres, SQLite… in production
import { webhookReceiver, type NestRequest, type WebhookEvent } from 'idem/nestjs'
import { createInbox } from 'idem/queue'
import { stripeSignature } from 'idem/webhooks'

/** The part of Stripe's event JSON this app reads (the body is typed as declared; the signature vouches for the sender). */
interface StripeEvent {
  type: string
}

@Injectable()
export class Payments {
  readonly succeeded: string[] = []
  async record(tx: unknown, event: WebhookEvent<NestRequest, StripeEvent>) {
    if (event.body?.type === 'payment_intent.succeeded') this.succeeded.push(event.id) // your writes, through tx
  }
}

@Controller('webhooks')
class WebhooksController {
  private readonly receiveStripe
  constructor(payments: Payments) {
    this.receiveStripe = webhookReceiver<unknown, StripeEvent>({
      inbox: createInbox({ store: memoryStore(), consumer: 'stripe-webhooks' }), // records each event id once
      verify: stripeSignature({ secret: process.env.STRIPE_WEBHOOK_SECRET ?? 'whsec_test_5a1e0c0ffee' }), // also gives the event id
      handler: (tx, event) => payments.record(tx, event),
    })
  }

  @Post('stripe')
  stripe(@Req() req: NestRequest, @Res() res: unknown) {
    return this.receiveStripe(req, res) // answers itself: 200, 200 duplicate, 401 invalid-signature
  }
}

@Module({ controllers: [WebhooksController], providers: [Payments] })
export class AppModule {}

export function createApp() {
  return NestFactory.create(AppModule, { rawBody: true }) // on Fastify: (AppModule, new FastifyAdapter(), { rawBody: true })
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const app = await createApp()
  await app.listen(3000)
}
