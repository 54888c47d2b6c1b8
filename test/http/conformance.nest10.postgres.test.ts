import { describe, vi } from 'vitest'
import { postgresBackend } from './support/backends.js'
import { describeConformance } from './support/conformance.js'
import { itRunsOnNest10, nest10FrontEnds } from './support/nest10.js'

// Hoisted above the imports: the library and the test app get NestJS 10 (see support/nest10.ts).
const nest10 = await vi.hoisted(async () => (await import('node:module')).createRequire(new URL('./nest10/package.json', import.meta.url)))
vi.mock('@nestjs/common', () => nest10('@nestjs/common'))
vi.mock('@nestjs/core', () => nest10('@nestjs/core'))
vi.mock('@nestjs/platform-express', () => nest10('@nestjs/platform-express'))
vi.mock('@nestjs/platform-fastify', () => nest10('@nestjs/platform-fastify'))

const backend = await postgresBackend('idem_http_nest10')

describe.skipIf(backend === undefined)('Idempotency-Key conformance on NestJS 10, Postgres', () => {
  itRunsOnNest10()
  describeConformance('postgres', () => backend, nest10FrontEnds)
})
