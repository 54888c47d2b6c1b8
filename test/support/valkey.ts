import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { createConnection } from 'node:net'
import { freePort } from './free-port.js'

/** A `valkey-server` of a test's own. */
export interface TestValkey {
  url: string
  port: number
  /** The server's version, as `valkey-server --version` says it. */
  version: string
  /** Kills it and waits until it is gone. */
  stop(): Promise<void>
}

// Valkey 8.1 brought SET … IFEQ, the compare-and-set the store uses where the server has it.
const MIN_VERSION = [8, 1]

/**
 * A throwaway `valkey-server` (8.1 or later: `tools/valkey/build.sh` builds one) on a free
 * loopback port, without persistence. Returns undefined (printing SKIPPED) when there is
 * none, outside CI; in CI that fails the run.
 */
export async function startValkey(): Promise<TestValkey | undefined> {
  const probe = spawnSync('valkey-server', ['--version'], { encoding: 'utf8' })
  const version = /v=(\d+\.\d+\.\d+)/.exec(probe.stdout ?? '')?.[1]
  const [major = 0, minor = 0] = (version ?? '0.0').split('.').map(Number)
  if (version === undefined || major < MIN_VERSION[0]! || (major === MIN_VERSION[0] && minor < MIN_VERSION[1]!)) {
    const why = version === undefined ? 'valkey-server is not installed' : `valkey-server is ${version}, older than 8.1`
    if (process.env.CI) throw new Error(`${why}: the Valkey tests need 8.1 or later in CI (tools/valkey/build.sh builds it)`)
    console.warn(`SKIPPED: ${why}; tools/valkey/build.sh builds one`)
    return undefined
  }
  const port = await freePort()
  const server: ChildProcess = spawn('valkey-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' })
  const exited = new Promise((resolve) => server.once('exit', resolve))
  await listening(port, 30_000)
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    version,
    async stop() {
      if (server.exitCode === null && server.signalCode === null) server.kill('SIGKILL')
      await exited
    },
  }
}

/** Resolves once something accepts connections on `port`. */
async function listening(port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = createConnection({ port, host: '127.0.0.1' })
      socket.once('connect', () => {
        socket.end()
        resolve(true)
      })
      socket.once('error', () => resolve(false))
    })
    if (open) return
    if (Date.now() > deadline) throw new Error(`valkey-server on ${port}: not listening within ${timeoutMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}
