// The Fetch and Hono rows of the HTTP conformance table (test/http/support/cases.ts), over
// the built package, on the runtime's own SQLite, on Postgres and on Redis (leased).
import { appState } from '../../http/support/app.js'
import { postgresBackendOf, redisBackendOf, sqliteBackendOf, type Backend } from '../../http/support/backend-kinds.js'
import { conformanceCases } from '../../http/support/cases.js'
import type { FrontEnd } from '../../http/support/frontends.js'
import { packageKit } from './kit.js'
import type { SliceGroup } from './main.js'
import { conformanceGroup, SLICE_BACKENDS, SLICE_FRONT_ENDS } from './plan.js'
import { ownSqlite, ownSqliteModule } from './runtime.js'
import { fetchFrontEnd, honoFrontEnd } from './web-frontends.js'

const FRONT_ENDS: Record<(typeof SLICE_FRONT_ENDS)[number], FrontEnd> = { fetch: fetchFrontEnd, hono: honoFrontEnd }

const BACKENDS: Record<(typeof SLICE_BACKENDS)[number], () => Promise<Backend | undefined>> = {
  sqlite: async () => sqliteBackendOf(packageKit, `idem-${ownSqliteModule.replace(':', '-')}-conf`, await ownSqlite()),
  postgres: () => postgresBackendOf(packageKit, 'idem_runtime_conf'),
  redis: () => redisBackendOf(packageKit, 'runtime-conf'),
}

/** One group per front end and backend: every row of the table, each on a fresh app. */
export function conformanceGroups(): SliceGroup[] {
  return SLICE_BACKENDS.flatMap((backendName) =>
    SLICE_FRONT_ENDS.map((frontEndName): SliceGroup => ({
      name: conformanceGroup(frontEndName, backendName),
      async open() {
        const backend = await BACKENDS[backendName]()
        if (backend === undefined) return { skipped: `${backendName} is unreachable` }
        const frontEnd = FRONT_ENDS[frontEndName]
        return {
          cases: conformanceCases.map(({ name, options = {}, run }) => ({
            name,
            async run() {
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
            },
          })),
          close: () => backend.close(),
        }
      },
    })),
  )
}
