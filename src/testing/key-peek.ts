import type { KeyPeek } from '../ports/key-peek.js'

/**
 * The store's `peek` when it implements the `KeyPeek` port (Postgres, Redis, DynamoDB,
 * and wrappers over them), so a contract case reads a key back through every read path
 * the store has.
 */
export function peekOf(store: object): KeyPeek['peek'] | undefined {
  return hasPeek(store) ? (scope, key) => store.peek(scope, key) : undefined
}

function hasPeek(store: object): store is KeyPeek {
  return typeof (store as Partial<KeyPeek>).peek === 'function'
}
