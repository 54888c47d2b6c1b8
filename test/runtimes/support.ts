// Starting programs on Bun and Deno (found by tools/runtimes/runtimes.mjs) for the tests.
import { spawn } from 'node:child_process'
import { locateRuntime, type Runtime, type RuntimeName } from '../../tools/runtimes/runtimes.mjs'
import { freePort } from '../support/free-port.js'
import { RESULT_PREFIX, type ScriptConfig } from './subpaths/results.js'

export type { Runtime, RuntimeName } from '../../tools/runtimes/runtimes.mjs'

export const root = new URL('../..', import.meta.url).pathname

/**
 * The runtime, ready to run programs; undefined (with a SKIPPED line) when it is not
 * installed outside CI. With `CI` set a missing runtime fails the run.
 */
export function findRuntime(name: RuntimeName): Runtime | undefined {
  const found = locateRuntime(name)
  if ('version' in found) return found
  if (process.env.CI) throw new Error(`${found.label} is required in CI: ${found.problem}; ${found.hint}`)
  console.warn(`SKIPPED: ${found.label} is not installed (${found.problem}); ${found.hint}`)
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

/**
 * Runs the script `test/runtimes/subpaths/<file>` on the runtime with `config` as its one
 * argument, and resolves with the result it printed (`IDEM-RESULT <json>`); fails,
 * with what it wrote on stderr, when it ends otherwise.
 */
export async function runScript<T>(runtime: Runtime, file: string, config: ScriptConfig, timeoutMs: number): Promise<T> {
  const ran = await runOn(runtime, `${root}test/runtimes/subpaths/${file}`, [JSON.stringify(config)], { timeoutMs })
  const line = ran.stdout.split('\n').find((each) => each.startsWith(RESULT_PREFIX))
  if (ran.code !== 0 || line === undefined) {
    throw new Error(`${runtime.label} ${file} ended (${ran.signal ?? ran.code}) without its result\nstdout:\n${ran.stdout}\nstderr:\n${ran.stderr}`)
  }
  return JSON.parse(line.slice(RESULT_PREFIX.length)) as T
}
