// A NestJS app whose POST /orders runs once per Idempotency-Key: the order is written
// through the key's transaction, and a retry gets the stored answer back.
// DATABASE_URL=postgres://postgres@127.0.0.1:5432/test (IDEM_SCHEMA picks the schema)
import 'reflect-metadata'
import { Body, Controller, Injectable, Module, Post, UseGuards, UseInterceptors, type CanActivate, type ExecutionContext } from '@nestjs/common'
import { NestFactory } from '@nestjs/core'
import pg from 'pg'
import { IdempotencyInterceptor, IdempotencyModule, IdempotencyTx } from 'idem/nestjs'
import { postgresStore, type PgClient } from 'idem/postgres'

const schema = process.env.IDEM_SCHEMA ?? 'public'

// Authentication runs as a guard, before the interceptor: `scope` reads what it set.
@Injectable()
class ApiKeyGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest()
    const apiKey = req.headers['x-api-key'] // a stand-in for your real authentication
    if (typeof apiKey !== 'string') return false
    req.user = { accountId: `account-of-${apiKey}` }
    return true
  }
}

@Controller('orders')
@UseGuards(ApiKeyGuard)
@UseInterceptors(IdempotencyInterceptor)
class OrdersController {
  @Post()
  async create(@Body() order: { amount: number }, @IdempotencyTx() tx: PgClient) {
    const { rows } = await tx.query<{ id: string }>(`INSERT INTO "${schema}".orders (amount) VALUES ($1) RETURNING id`, [order.amount])
    return { orderId: Number(rows[0]!.id), amount: order.amount }
  }
}

export async function createApp() {
  const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, connectionTimeoutMillis: 5_000 })
  // An idle connection the server drops is reported here; without a listener it crashes the process.
  pool.on('error', (error) => console.error('idle Postgres connection failed:', error.message))
  const store = postgresStore({ pool, schema })
  await store.migrate()
  await pool.query(`CREATE TABLE IF NOT EXISTS "${schema}".orders (id bigserial PRIMARY KEY, amount int NOT NULL)`)

  @Module({
    imports: [IdempotencyModule.forRoot({ store, scope: (req) => req.user.accountId })],
    controllers: [OrdersController],
    providers: [ApiKeyGuard],
  })
  class AppModule {}

  // rawBody: the fingerprint covers the bytes the client sent.
  const app = await NestFactory.create(AppModule, { rawBody: true })
  app.enableShutdownHooks()
  return { app, pool }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { app } = await createApp()
  await app.listen(3000)
}
