// Finding Bun and Deno (dev dependencies: their binaries come in per-platform packages, so
// `npm ci` downloads nothing else) and starting programs on them, with nothing fetched:
// everything comes from node_modules on disk.
import { spawn, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { freePort } from '../support/free-port.js'

export type RuntimeName = 'bun' | 'deno'

/** A runtime found on disk, and how to start a program on it. */
export interface Runtime {
  name: RuntimeName
  /** Its `--version` line. */
  version: string
  /** The binary and its flags: the program's path goes next, then its arguments. */
  argv: string[]
  /** The same for a module whose default export's `fetch` the runtime serves on `port` (and `PORT`), on loopback where it lets us say so. */
  serveArgv(port: number): string[]
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

// No auto-install: a package missing from node_modules fails instead of being fetched.
const BUN_FLAGS = ['--no-install']
// The project's node_modules as npm installed it, never changed nor fetched into; no
// deno.lock written into the worktree; test files import `./x.js` for `./x.ts`, as tsc
// wants, which Deno resolves with sloppy imports.
const DENO_FLAGS = ['--allow-all', '--node-modules-dir=manual', '--cached-only', '--no-lock', '--no-prompt', '--unstable-sloppy-imports', '--quiet']

const COMMANDS: Record<RuntimeName, { run: string[]; serve(port: number): string[] }> = {
  // Bun serves a module's default export itself, on its `port`.
  bun: { run: BUN_FLAGS, serve: () => BUN_FLAGS },
  deno: { run: ['run', ...DENO_FLAGS], serve: (port) => ['serve', '--host', '127.0.0.1', '--port', String(port), ...DENO_FLAGS] },
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
      return {
        name,
        version: probe.stdout.trim().split('\n')[0]!,
        argv: [binary, ...COMMANDS[name].run],
        serveArgv: (port) => [binary, ...COMMANDS[name].serve(port)],
        env: { ...process.env, ...QUIET[name] },
      }
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

/** A server the runtime runs, until `stop`. */
export interface Serving {
  url: string
  /** What it printed so far (for a failure's message). */
  output(): string
  stop(): Promise<void>
}

/** Serves `program`'s default export on the runtime on a free loopback port; resolves once it answers. */
export async function serveOn(runtime: Runtime, program: string, env: NodeJS.ProcessEnv = {}): Promise<Serving> {
  const port = await freePort()
  const argv = runtime.serveArgv(port)
  const child = spawn(argv[0]!, [...argv.slice(1), program], { cwd: root, env: { ...runtime.env, ...env, PORT: String(port) }, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout.on('data', (chunk) => (output += chunk))
  child.stderr.on('data', (chunk) => (output += chunk))
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const url = `http://127.0.0.1:${port}`
  const serving: Serving = {
    url,
    output: () => output,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
      await exited
    },
  }
  for (let attempt = 0; ; attempt++) {
    if (child.exitCode !== null) throw new Error(`${program} ended (${child.exitCode}) before it served: ${output}`)
    // Any answer means it listens: the app has no route at /.
    const answered = await fetch(url, { signal: AbortSignal.timeout(1_000) }).then(
      () => true,
      () => false,
    )
    if (answered) return serving
    if (attempt >= 150) {
      await serving.stop()
      throw new Error(`${program} did not answer on ${url} within 30 s: ${output}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
}
