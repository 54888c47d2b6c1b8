import { describe, vi } from 'vitest'
import { sqliteBackend } from './support/backends.js'
import { describeConformance } from './support/conformance.js'
import { itRunsOnNest10, nest10FrontEnds } from './support/nest10.js'

// Hoisted above the imports: the library and the test app get NestJS 10 (see support/nest10.ts).
const nest10 = await vi.hoisted(async () => (await import('node:module')).createRequire(new URL('./nest10/package.json', import.meta.url)))
vi.mock('@nestjs/common', () => nest10('@nestjs/common'))
vi.mock('@nestjs/core', () => nest10('@nestjs/core'))
vi.mock('@nestjs/platform-express', () => nest10('@nestjs/platform-express'))
vi.mock('@nestjs/platform-fastify', () => nest10('@nestjs/platform-fastify'))

const backend = sqliteBackend('idem-http-nest10')

describe('Idempotency-Key conformance on NestJS 10, SQLite (a real file in WAL mode)', () => {
  itRunsOnNest10()
  describeConformance('sqlite', () => backend, nest10FrontEnds)
})
