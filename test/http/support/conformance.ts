import { afterAll, describe, it } from 'vitest'
import { appState } from './app.js'
import type { Backend } from './backends.js'
import { conformanceCases } from './cases.js'
import { frontEnds, type FrontEnd } from './frontends.js'
import { nodeCases } from './node-cases.js'

/**
 * Runs the shared conformance table against each front end (by default `frontEnds`:
 * fetch, hono, express 5 and 4, koa 3 and 2, fastify, NestJS 11 on Express and Fastify with routes
 * that return their value and routes that answer through `@Res()`) over one
 * backend, and the rows only some of them can run (`nodeCases`) on those. Each case gets
 * a fresh app with its own options.
 */
export function describeConformance(backendName: string, getBackend: () => Backend | undefined, fronts: readonly FrontEnd[] = frontEnds): void {
  afterAll(async () => {
    await getBackend()?.close()
  })
  for (const frontEnd of fronts) {
    // A case renamed or removed must not leave its exception behind.
    for (const name of Object.keys(frontEnd.cannot ?? {})) {
      if (!conformanceCases.some((c) => c.name === name)) throw new Error(`${frontEnd.name} lists a case that does not exist: ${name}`)
    }
    describe(`${frontEnd.name} × ${backendName}`, () => {
      for (const { name, options = {}, run } of [...conformanceCases, ...nodeCases.filter((c) => c.runsOn(frontEnd.name))]) {
        const cannot = frontEnd.cannot?.[name]
        if (cannot !== undefined) {
          it.skip(`${name} (cannot: ${cannot})`, () => {})
          continue
        }
        it(name, async () => {
          const backend = getBackend()!
          const state = appState()
          const client = await frontEnd.start(backend, options, state)
          const cleanup: Array<() => void> = []
          try {
            await run({ client, backend, state, frontEnd: frontEnd.name, cleanup })
          } finally {
            for (const undo of cleanup) undo()
            state.gate.open()
            await client.close()
          }
        })
      }
    })
  }
}
