// Finding Bun and Deno (dev dependencies: their binaries come in per-platform packages, so
// `npm ci` downloads nothing else) and starting programs on them, with nothing fetched:
// everything comes from node_modules on disk.
import { spawn, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'

export type RuntimeName = 'bun' | 'deno'

/** A runtime found on disk, and how to start a program on it. */
export interface Runtime {
  name: RuntimeName
  /** Its `--version` line. */
  version: string
  /** The binary and its flags: the program's path goes next, then its arguments. */
  argv: string[]
  /** The environment to start it with: the test's own plus the runtime's quiet switches. */
  env: NodeJS.ProcessEnv
}

export const root = new URL('../..', import.meta.url).pathname

const PACKAGES: Record<RuntimeName, { override: string; binary: string; label: string }> = {
  // The `bun` package's postinstall puts the platform's binary at bin/bun.exe (on every OS).
  bun: { override: 'IDEM_BUN', binary: 'bin/bun.exe', label: 'Bun' },
  // The `deno` package's postinstall puts the platform's binary beside its package.json.
  deno: { override: 'IDEM_DENO', binary: 'deno', label: 'Deno' },
}

const FLAGS: Record<RuntimeName, string[]> = {
  // No auto-install: a package missing from node_modules fails instead of being fetched.
  bun: ['--no-install'],
  // The project's node_modules as npm installed it, never changed nor fetched into; no
  // deno.lock written into the worktree; test files import `./x.js` for `./x.ts`, as tsc
  // wants, which Deno resolves with sloppy imports.
  deno: ['run', '--allow-all', '--node-modules-dir=manual', '--cached-only', '--no-lock', '--no-prompt', '--unstable-sloppy-imports', '--quiet'],
}

const QUIET: Record<RuntimeName, NodeJS.ProcessEnv> = {
  bun: { DO_NOT_TRACK: '1' },
  deno: { DENO_NO_UPDATE_CHECK: '1', DENO_NO_PROMPT: '1', NO_COLOR: '1' },
}

/** Where the runtime's binary is: `IDEM_BUN` / `IDEM_DENO` when set, else the dev dependency's. */
function binaryOf(name: RuntimeName): string {
  const { override, binary } = PACKAGES[name]
  const overridden = process.env[override]
  if (overridden) return overridden
  const require = createRequire(join(root, 'package.json'))
  return join(dirname(require.resolve(`${name}/package.json`)), binary)
}

/**
 * The runtime, ready to run programs; undefined (with a SKIPPED line) when it is not
 * installed outside CI. With `CI` set a missing runtime fails the run.
 */
export function findRuntime(name: RuntimeName): Runtime | undefined {
  const { label, override } = PACKAGES[name]
  let problem: string
  try {
    const binary = binaryOf(name)
    const probe = existsSync(binary) ? spawnSync(binary, ['--version'], { encoding: 'utf8', timeout: 30_000 }) : undefined
    if (probe?.status === 0) {
      return { name, version: probe.stdout.trim().split('\n')[0]!, argv: [binary, ...FLAGS[name]], env: { ...process.env, ...QUIET[name] } }
    }
    problem = probe === undefined ? `${binary} does not exist` : `${binary} --version failed: ${(probe.error?.message ?? probe.stderr).trim()}`
  } catch (error) {
    problem = (error as Error).message
  }
  const hint = `install the dev dependencies (npm ci; its postinstall puts the binary in place) or point ${override} at a ${label} binary`
  if (process.env.CI) throw new Error(`${label} is required in CI: ${problem}; ${hint}`)
  console.warn(`SKIPPED: ${label} is not installed (${problem}); ${hint}`)
  return undefined
}

/** How a program on the runtime ended, and what it printed. */
export interface Ran {
  code: number | null
  signal: NodeJS.Signals | null
  stdout: string
  stderr: string
}

/** Runs `program` (a path) on the runtime to its end, within `timeoutMs`, in the project's root. */
export function runOn(runtime: Runtime, program: string, args: readonly string[] = [], { env = {} as NodeJS.ProcessEnv, timeoutMs = 60_000 } = {}): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(runtime.argv[0]!, [...runtime.argv.slice(1), program, ...args], {
      cwd: root,
      env: { ...runtime.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk) => (stdout += chunk))
    child.stderr.on('data', (chunk) => (stderr += chunk))
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
    child.on('error', (error) => {
      clearTimeout(timer)
      reject(error)
    })
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      resolve({ code, signal, stdout, stderr })
    })
  })
}
