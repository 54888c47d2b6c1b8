// The store constructors as a user's app gets them: from the built package (dist/), through its exports.
import { createLeasedIdem } from 'idem'
import { postgresStore } from 'idem/postgres'
import { redisStore } from 'idem/redis'
import { sqliteStore } from 'idem/sqlite'
import type { StoreKit } from '../../http/support/backend-kinds.js'

/**
 * idem's stores from the package, for the conformance backends. The kit is typed by the
 * sources' declarations; the package's are the same, but TypeScript tells their
 * branded types (`Discarded`) apart, hence the one conversion.
 */
export const packageKit = { postgresStore, sqliteStore, redisStore, createLeasedIdem } as unknown as StoreKit
