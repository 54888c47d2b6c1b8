import { randomUUID } from 'node:crypto'
import { createIdem } from '../core/engine.js'
import { CALLS } from './key-store-cases/calls.js'
import { DUPLICATES } from './key-store-cases/duplicates.js'
import type { ContractCase, KeyStoreKit, StoreHarness } from './key-store-cases/kit.js'

export type { ContractCase, StoreHarness } from './key-store-cases/kit.js'

/**
 * The key-store contract (the `KeyStore` port the transactional engine runs on): the
 * behaviour every idem store must have, as plain cases that any test runner can run
 * (`for (const c of keyStoreContract(h)) it(c.name, c.run)`). Each case uses fresh random
 * keys, so cases may share one harness and reruns never collide. `getHarness` is called
 * when a case runs, so the harness may be built in a beforeAll hook.
 * @example
 * for (const c of keyStoreContract<PgClient>(() => ({
 *   store,
 *   unavailableStore: () => downStore,
 *   writeEffect: (tx, id) => tx.query('INSERT INTO effects (id) VALUES ($1)', [id]).then(() => {}),
 *   countEffects: async (id) => (await pool.query('SELECT count(*)::int AS n FROM effects WHERE id = $1', [id])).rows[0].n,
 * }))) it(c.name, c.run)
 */
export function keyStoreContract<Tx>(getHarness: () => StoreHarness<Tx>): ContractCase[] {
  return [...CALLS, ...DUPLICATES].map((contractCase) => ({
    name: contractCase.name,
    // Resolved when a case runs, so the harness may be built in a beforeAll hook.
    run: () => contractCase.run(keyStoreKit(getHarness())),
  }))
}

function keyStoreKit<Tx>(harness: StoreHarness<Tx>): KeyStoreKit<Tx> {
  return {
    harness,
    idem: createIdem({ store: harness.store, waitMs: 30_000 }),
    fresh: (label) => `${label}-${randomUUID()}`,
    body<T>(effect: string, value: T) {
      const calls = { count: 0 }
      const fn = async (tx: Tx): Promise<T> => {
        calls.count++
        await harness.writeEffect(tx, effect)
        return value
      }
      return { calls, fn }
    },
    latch() {
      let open!: () => void
      const wait = new Promise<void>((resolve) => (open = resolve))
      return { wait, open }
    },
  }
}
