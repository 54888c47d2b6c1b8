import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/**
 * The last commit before the SQL stores' protocol (src/stores/sql/, #46 item 1): its
 * Postgres and SQLite stores are the previous release's, each written on its own.
 */
export const PREVIOUS_RELEASE = 'bf06f6ac8accf06e954148c3364fe3f800659b96'

const root = new URL('../..', import.meta.url).pathname

/** The previous release's store entries, loaded from its own source, and a way to remove that source. */
export interface PreviousRelease {
  readonly postgres: typeof import('../../src/stores/postgres/index.js')
  readonly sqlite: typeof import('../../src/stores/sqlite/index.js')
  remove(): void
}

/**
 * Checks the previous release's `src/` out of git into a folder of its own (with this
 * checkout's node_modules), and imports its Postgres and SQLite entries from there:
 * their code as it was, run beside this checkout's. Their public API is this one's, so
 * they are typed by it.
 * @throws Error when the commit is not in the repository's history (a shallow clone)
 */
export async function previousRelease(): Promise<PreviousRelease> {
  const dir = mkdtempSync(join(tmpdir(), 'idem-previous-release-'))
  try {
    execFileSync('sh', ['-c', `git archive ${PREVIOUS_RELEASE} src | tar -x -C "${dir}"`], { cwd: root, stdio: ['ignore', 'ignore', 'pipe'] })
  } catch (error) {
    rmSync(dir, { recursive: true, force: true })
    throw new Error(`the previous release (${PREVIOUS_RELEASE}) is not in this repository's history: fetch it (git fetch --unshallow)`, { cause: error })
  }
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'))
  return {
    postgres: await import(join(dir, 'src/stores/postgres/index.ts')),
    sqlite: await import(join(dir, 'src/stores/sqlite/index.ts')),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  }
}
