// The declarations a CommonJS project sees (`npm run build` runs this after tsc).
//
// idem is ESM only; a CommonJS program (a Nest app as Nest's CLI makes it) loads it with
// require(), which Node runs on ES modules from 20.19 and 22.12 (package.json "engines").
// What require() returns is the module's namespace: the same named exports the ESM
// declarations describe. TypeScript, though, reads a `.d.ts` in a "type": "module"
// package as an ES module and refuses to let a CommonJS file import it under
// `module: node16` (TS1479). So every `dist/**/*.d.ts` gets a `.d.cts` twin, the same
// text with its relative imports pointing at the twins, and each export's `require`
// condition names the twin. (idem has no default export, so the namespace require()
// returns is exactly what the twins declare.)
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

const dist = new URL('../dist/', import.meta.url).pathname

// `from './x.js'`, `import('./x.js')`, `declare module './x.js'` (an augmentation, such as
// http's error code added to core's list): relative specifiers only; bare ones (peers) stay.
const RELATIVE = /(\bfrom\s+|\bimport\s*\(\s*|\bdeclare\s+module\s+)(['"])(\.{1,2}\/[^'"]+)\.js\2/g

let written = 0
for (const entry of readdirSync(dist, { recursive: true, withFileTypes: true })) {
  if (!entry.isFile() || !entry.name.endsWith('.d.ts')) continue
  const file = join(entry.parentPath, entry.name)
  const twin = readFileSync(file, 'utf8').replace(RELATIVE, (_, before, quote, path) => `${before}${quote}${path}.cjs${quote}`)
  writeFileSync(file.replace(/\.d\.ts$/, '.d.cts'), twin)
  written++
}
if (written === 0) throw new Error('cjs-declarations: no .d.ts in dist/; run tsc first')
