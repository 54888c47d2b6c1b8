// A temporary project as a user's is after installing idem from its packed tarball: the
// tarball `npm pack` makes of the built package, unpacked at node_modules/idem (what
// `npm install ./idem-0.1.0.tgz` puts there), and every other package (the peers, their
// types, TypeScript) linked from this repository's node_modules, so nothing is fetched.
import { execFile } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)
const root = new URL('../..', import.meta.url).pathname

/** A project directory with idem installed from its tarball; `remove()` deletes it. */
export interface PackedProject {
  readonly dir: string
  /** The tarball's path (inside `dir`), as `npm pack` named it. */
  readonly tarball: string
  remove(): void
}

/** Packs idem as it is built now (`npm test` builds first) into a new project directory. */
export async function packedProject(prefix: string): Promise<PackedProject> {
  const dir = mkdtempSync(join(tmpdir(), `idem-${prefix}-`))
  const { stdout } = await run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', dir], { cwd: root, maxBuffer: 16 * 1024 * 1024, timeout: 120_000 })
  const tarball = join(dir, (JSON.parse(stdout) as Array<{ filename: string }>)[0]!.filename)
  const modules = join(dir, 'node_modules')
  mkdirSync(modules)
  for (const entry of readdirSync(join(root, 'node_modules'))) {
    if (entry !== '.bin' && entry !== 'idem' && !entry.startsWith('.')) symlinkSync(join(root, 'node_modules', entry), join(modules, entry))
  }
  await run('tar', ['-xzf', tarball, '-C', dir])
  renameSync(join(dir, 'package'), join(modules, 'idem'))
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'idem-user-app', version: '1.0.0', private: true, type: 'module' }))
  return { dir, tarball, remove: () => rmSync(dir, { recursive: true, force: true }) }
}
