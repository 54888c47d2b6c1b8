import type { StoreEntry } from '../ports/store-entry.js'

/**
 * Every store, one line each, in the order the `idem` command lists them: its folder's
 * entry (`<store>/entry.ts`, ports/store-entry.ts). The CLI finds its flags, targets,
 * connections and `idem sql` scripts here, and `node tools/exports.mjs` writes the
 * stores' package.json "exports" from it: adding a store is its folder and one line here.
 */
export const STORES: readonly StoreEntry[] = await Promise.all([
  import('./postgres/entry.js'),
  import('./sqlite/entry.js'),
  import('./mysql/entry.js'),
  import('./memory/entry.js'),
  import('./redis/entry.js'),
  import('./dynamodb/entry.js'),
]).then((entries) => entries.map(({ entry }) => entry))
