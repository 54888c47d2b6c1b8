import { afterAll, describe, it } from 'vitest'
import { appState } from './app.js'
import type { Backend } from './backends.js'
import { conformanceCases } from './cases.js'
import { frontEnds } from './frontends.js'

/**
 * Runs the shared conformance table against each of the four front ends (fetch, hono,
 * express, fastify) over one backend. Each case gets a fresh app with its own options.
 */
export function describeConformance(backendName: string, getBackend: () => Backend | undefined): void {
  afterAll(async () => {
    await getBackend()?.close()
  })
  for (const frontEnd of frontEnds) {
    describe(`${frontEnd.name} × ${backendName}`, () => {
      for (const { name, options = {}, run } of conformanceCases) {
        it(name, async () => {
          const backend = getBackend()!
          const state = appState()
          const client = await frontEnd.start(backend, options, state)
          try {
            await run({ client, backend, state, frontEnd: frontEnd.name })
          } finally {
            state.gate.open()
            await client.close()
          }
        })
      }
    })
  }
}
