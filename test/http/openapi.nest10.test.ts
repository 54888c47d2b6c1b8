// idem/openapi/nestjs on NestJS 10 with @nestjs/swagger 8 (test/http/nest10's own
// node_modules, see support/nest10.ts): the routes the interceptor is bound to, and no
// other, are described; the document is valid OpenAPI.
import 'reflect-metadata'
import { Controller, Get, Module, Param, Patch, Post, UseInterceptors, type INestApplication } from '@nestjs/common'
import { NestFactory } from '@nestjs/core'
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger'
import { readFileSync } from 'node:fs'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { IdempotencyInterceptor, IdempotencyModule } from '../../src/http/nestjs.js'
import { idempotencyOpenApiDocument } from '../../src/http/documents/openapi/nestjs.js'
import { memoryStore } from '../../src/stores/memory/index.js'
import { itRunsOnNest10, nest10Require } from './support/nest10.js'
import { expectDescribed, expectValidOpenApi } from './support/openapi.js'

// Hoisted above the imports: the library and the test app get NestJS 10 and @nestjs/swagger 8.
const nest10 = await vi.hoisted(async () => (await import('node:module')).createRequire(new URL('./nest10/package.json', import.meta.url)))
vi.mock('@nestjs/common', () => nest10('@nestjs/common'))
vi.mock('@nestjs/core', () => nest10('@nestjs/core'))
vi.mock('@nestjs/platform-express', () => nest10('@nestjs/platform-express'))
vi.mock('@nestjs/swagger', () => nest10('@nestjs/swagger'))

@Controller('orders')
@UseInterceptors(IdempotencyInterceptor)
class OrdersController {
  @Post()
  create() {
    return { id: '1' }
  }

  @Patch(':id')
  update(@Param('id') id: string) {
    return { id }
  }

  @Get(':id')
  find(@Param('id') id: string) {
    return { id }
  }
}

@Controller('payments')
class PaymentsController {
  @Post()
  @UseInterceptors(IdempotencyInterceptor)
  pay() {
    return {}
  }

  @Post('refunds')
  refund() {
    return {}
  }
}

const options = { store: memoryStore(), scope: () => 'acct' }

@Module({ imports: [IdempotencyModule.forRoot(options)], controllers: [OrdersController, PaymentsController] })
class AppModule {}

describe('idempotencyOpenApiDocument on NestJS 10 and @nestjs/swagger 8', () => {
  itRunsOnNest10()

  let app: INestApplication | undefined
  afterAll(() => app?.close())

  it('describes the routes the interceptor is bound to, and no other', async () => {
    const { version } = JSON.parse(readFileSync(nest10Require.resolve('@nestjs/swagger/package.json'), 'utf8')) as { version: string }
    expect(version).toMatch(/^8\./)
    app = await NestFactory.create(AppModule, { logger: false, abortOnError: false })
    const config = new DocumentBuilder().setTitle('Shop').setVersion('1').build()
    const document = idempotencyOpenApiDocument(app, () => SwaggerModule.createDocument(app!, config), options) as Record<string, any>
    await expectValidOpenApi(document)
    expectDescribed(document, ['POST /orders', 'PATCH /orders/{id}', 'POST /payments'])
    expect(JSON.stringify(document)).not.toContain('x-idem-protected')
  })
})
