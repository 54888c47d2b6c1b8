import type { StoreEntry } from '../../ports/store-entry.js'

/** The in-memory stores: a public subpath, and no `idem` flag (they live and die with the process). */
export const entry: StoreEntry = {
  name: 'memory',
  title: 'memory',
  exports: { subpath: './memory', module: './dist/stores/memory/index.js' },
}
