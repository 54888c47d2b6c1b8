import { createRequire } from 'node:module'
import { readFileSync } from 'node:fs'
import { expect, it } from 'vitest'
import { nestFrontEnd, type FrontEnd } from './frontends.js'

/**
 * NestJS 10 lives in test/http/nest10's own node_modules (npm aliases cannot hold two
 * Nest majors: Nest's packages require each other by name). The conformance files of
 * Nest 10 map `@nestjs/*` there with `vi.mock`, for the library and the test app alike:
 *
 *   vi.mock('@nestjs/common', () => nest10('@nestjs/common'))   (and core, both platforms)
 */
export const nest10Require = createRequire(new URL('../nest10/package.json', import.meta.url))

/**
 * The front ends of NestJS 10, on Express (4, Nest 10's) and on Fastify (4, Nest 10's),
 * each with routes that return their value and routes that answer through `@Res()`.
 */
export const nest10FrontEnds: readonly FrontEnd[] = [
  nestFrontEnd(10, 'express'),
  nestFrontEnd(10, 'fastify'),
  nestFrontEnd(10, 'express', 'res'),
  nestFrontEnd(10, 'fastify', 'res'),
]

/** A test that the app really runs on NestJS 10: the `@nestjs/core` the test app got is Nest 10's. */
export function itRunsOnNest10(): void {
  it('runs on NestJS 10 (the @nestjs/* the app imports are test/http/nest10/node_modules/)', async () => {
    const { version } = JSON.parse(readFileSync(nest10Require.resolve('@nestjs/core/package.json'), 'utf8')) as { version: string }
    expect(version).toMatch(/^10\./)
    const core = await import('@nestjs/core')
    expect(core.NestFactory).toBe((nest10Require('@nestjs/core') as typeof core).NestFactory)
    const common = await import('@nestjs/common')
    expect(common.Injectable).toBe((nest10Require('@nestjs/common') as typeof common).Injectable)
  })
}
