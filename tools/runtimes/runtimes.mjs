// Finding Bun and Deno, for the tests (test/runtimes) and bench:http: both are dev
// dependencies whose binaries come in per-platform packages, so `npm ci` downloads
// nothing else; and starting programs on them with nothing fetched: everything comes
// from node_modules on disk.
import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'

const root = new URL('../..', import.meta.url).pathname

const PACKAGES = {
  // The `bun` package's postinstall puts the platform's binary at bin/bun.exe (on every OS);
  // the binary itself is in @oven/bun-<os>-<cpu>[-variant]/bin/bun.
  bun: { override: 'IDEM_BUN', label: 'Bun', binary: 'bin/bun.exe', platforms: '@oven', platformBinary: 'bin/bun' },
  // The `deno` package's postinstall puts it beside its package.json; it is in @deno/<os>-<cpu>/deno.
  deno: { override: 'IDEM_DENO', label: 'Deno', binary: 'deno', platforms: '@deno', platformBinary: 'deno' },
}

// No auto-install: a package missing from node_modules fails instead of being fetched.
const BUN_FLAGS = ['--no-install']
// The project's node_modules as npm installed it, never changed nor fetched into; no
// deno.lock written into the worktree; test files import `./x.js` for `./x.ts`, as tsc
// wants, which Deno resolves with sloppy imports.
const DENO_FLAGS = ['--allow-all', '--node-modules-dir=manual', '--cached-only', '--no-lock', '--no-prompt', '--unstable-sloppy-imports', '--quiet']

const COMMANDS = {
  // Bun serves a module's default export itself, on its `port`.
  bun: { run: BUN_FLAGS, serve: () => BUN_FLAGS },
  deno: { run: ['run', ...DENO_FLAGS], serve: (port) => ['serve', '--host', '127.0.0.1', '--port', String(port), ...DENO_FLAGS] },
}

const QUIET = {
  bun: { DO_NOT_TRACK: '1' },
  deno: { DENO_NO_UPDATE_CHECK: '1', DENO_NO_PROMPT: '1', NO_COLOR: '1' },
}

/**
 * Where the runtime's binary may be: `IDEM_BUN` / `IDEM_DENO` when set; else the dev
 * dependency's, where its postinstall put it, then in its platform packages (should npm
 * have skipped the install scripts).
 */
function binariesOf(name) {
  const { override, binary, platforms, platformBinary } = PACKAGES[name]
  const overridden = process.env[override]
  if (overridden) return [overridden]
  const require = createRequire(join(root, 'package.json'))
  const candidates = [join(dirname(require.resolve(`${name}/package.json`)), binary)]
  const scope = join(root, 'node_modules', platforms)
  if (existsSync(scope)) for (const platform of readdirSync(scope)) candidates.push(join(scope, platform, platformBinary))
  return candidates.filter((candidate) => existsSync(candidate))
}

/** The runtime ready to run programs, or why it is not there and how to get it. */
export function locateRuntime(name) {
  const { label, override } = PACKAGES[name]
  const hint = `install the dev dependencies (npm ci; their postinstall puts the binary in place) or point ${override} at a ${label} binary`
  const tried = []
  try {
    for (const binary of binariesOf(name)) {
      const probe = spawnSync(binary, ['--version'], { encoding: 'utf8', timeout: 30_000 })
      if (probe.status === 0) {
        return {
          name,
          label,
          version: probe.stdout.trim().split('\n')[0],
          argv: [binary, ...COMMANDS[name].run],
          serveArgv: (port) => [binary, ...COMMANDS[name].serve(port)],
          env: { ...process.env, ...QUIET[name] },
        }
      }
      tried.push(`${binary} --version failed: ${(probe.error?.message ?? probe.stderr).trim()}`)
    }
  } catch (error) {
    tried.push(error.message)
  }
  return { name, label, problem: tried.length === 0 ? 'no binary found' : tried.join('; '), hint }
}
