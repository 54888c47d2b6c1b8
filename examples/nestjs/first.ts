// The smallest Nest app with idem: one route that runs once per Idempotency-Key, its keys
// in memory (a store that needs nothing, for trying it out; Postgres below for real use).
import 'reflect-metadata'
import { Body, Controller, Module, Post, UseInterceptors } from '@nestjs/common'
import { NestFactory } from '@nestjs/core'
import { memoryStore } from 'idem/memory'
import { IdempotencyInterceptor, IdempotencyModule } from 'idem/nestjs'

let orders = 0

@Controller('orders')
class OrdersController {
  @Post()
  @UseInterceptors(IdempotencyInterceptor) // on this route only; on the class for all its routes
  create(@Body() order: { amount: number }) {
    return { orderId: ++orders, amount: order.amount }
  }
}

@Module({
  imports: [IdempotencyModule.forRoot({ store: memoryStore() })],
  controllers: [OrdersController],
})
class AppModule {}

export function createApp() {
  return NestFactory.create(AppModule, { rawBody: true })
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const app = await createApp()
  await app.listen(3000)
}
