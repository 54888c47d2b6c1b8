import type { Idem } from '../../core/engine.js'
import type { KeyStore } from '../../ports/key-store.js'

/** What a store author supplies to run the contract against their store. */
export interface StoreHarness<Tx> {
  /** A migrated store, isolated from other test runs (its own schema, file or prefix). */
  store: KeyStore<Tx>
  /** Writes one effect row tagged `id` through the transaction. */
  writeEffect(tx: Tx, id: string): void | Promise<void>
  /** Counts committed effect rows tagged `id`. */
  countEffects(id: string): number | Promise<number>
  /** A store of the same kind whose backend is down (closed pool, closed file, closed port). */
  unavailableStore(): KeyStore<Tx> | Promise<KeyStore<Tx>>
}

/**
 * One case of a contract suite: a name and a function that throws when the store breaks
 * the contract.
 */
export interface ContractCase {
  name: string
  /** Runs the case; rejects when the store breaks the contract. */
  run(): Promise<void>
}

/** What each key-store case runs with: the harness, an engine on its store, and small helpers. */
export interface KeyStoreKit<Tx> {
  readonly harness: StoreHarness<Tx>
  /** An engine on the harness's store that lets a duplicate wait 30 s. */
  readonly idem: Idem<Tx>
  /** A key of its own: `label` and a random UUID, so cases may share one store and reruns never collide. */
  fresh(label: string): string
  /** A function body that counts its runs and writes one effect. */
  body<T>(effect: string, value: T): { calls: { count: number }; fn: (tx: Tx) => Promise<T> }
  /** A promise and the function that resolves it. */
  latch(): { wait: Promise<void>; open: () => void }
}

/** One key-store case: a name, and what it checks with the kit. */
export interface KeyStoreCase {
  name: string
  run<Tx>(kit: KeyStoreKit<Tx>): Promise<void>
}
