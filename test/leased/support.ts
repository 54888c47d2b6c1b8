import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { Redis } from 'ioredis'
import { freePort } from '../support/free-port.js'

/** The Redis the tests use (override with IDEM_TEST_REDIS_URL). */
export const REDIS_URL = process.env.IDEM_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'

export interface TestRedis {
  client: Redis
  /** A key prefix of this test file's own, so parallel files and reruns never collide. */
  prefix: string
  /** Deletes every key under the prefix and closes the client. */
  drop(): Promise<void>
}

/**
 * A Redis connection and a key prefix of its own for one test file. Returns undefined
 * when Redis is unreachable outside CI (the file then skips, and says so); in CI an
 * unreachable Redis fails the run.
 */
export async function testRedis(label: string): Promise<TestRedis | undefined> {
  const client = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1, connectTimeout: 2_000 })
  try {
    await client.connect()
    await client.ping()
  } catch (error) {
    client.disconnect()
    if (process.env.CI) throw new Error(`Redis at ${REDIS_URL} is required in CI: ${(error as Error).message}`)
    console.warn(`SKIPPED: Redis at ${REDIS_URL} is unreachable (${(error as Error).message})`)
    return undefined
  }
  const prefix = `idem-test:${label}:${randomBytes(4).toString('hex')}:`
  return {
    client,
    prefix,
    async drop() {
      let cursor = '0'
      do {
        const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000)
        if (keys.length > 0) await client.unlink(...keys)
        cursor = next
      } while (cursor !== '0')
      client.disconnect()
    },
  }
}

/** A child process running a fixture, with its stdout as lines. */
export interface Fixture {
  child: ChildProcessWithoutNullStreams
  /** Resolves with the first stdout line starting with `prefix` (the rest of the line). */
  line(prefix: string): Promise<string>
  /** Resolves with how the process ended: its exit code, or the signal that killed it. */
  exited: Promise<number | NodeJS.Signals | null>
  /** What the process wrote to stderr so far. */
  stderr(): string
}

/** Starts `test/fixtures/<name>` with Node, passing `config` as one JSON argument. */
export function startFixture(name: string, config: unknown, { nodeArgs = [] as string[], env = {} as Record<string, string> } = {}): Fixture {
  const script = fileURLToPath(new URL(`../fixtures/${name}`, import.meta.url))
  const child = spawn(process.execPath, [...nodeArgs, script, JSON.stringify(config)], { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, ...env } })
  let out = ''
  let err = ''
  const waiters: Array<() => void> = []
  child.stdout.on('data', (chunk) => {
    out += chunk
    for (const wake of waiters.splice(0)) wake()
  })
  child.stderr.on('data', (chunk) => (err += chunk))
  const exited = new Promise<number | NodeJS.Signals | null>((resolve) => child.on('exit', (code, signal) => resolve(signal ?? code)))
  let ended = false
  exited.then(() => {
    ended = true
    for (const wake of waiters.splice(0)) wake()
  })
  return {
    child,
    exited,
    stderr: () => err,
    async line(prefix) {
      for (;;) {
        const found = out.split('\n').find((l) => l.startsWith(prefix))
        if (found !== undefined && out.includes(`${found}\n`)) return found.slice(prefix.length).trim()
        if (ended) throw new Error(`fixture ${name} ended before printing ${JSON.stringify(prefix)}; stdout: ${out}; stderr: ${err}`)
        await new Promise<void>((resolve) => waiters.push(resolve))
      }
    },
  }
}

/** A Redis server of the test's own (so it can be stopped, restarted and slowed without disturbing others). */
export interface PrivateRedis {
  url: string
  port: number
  start(): Promise<void>
  /** Kills the server (SIGKILL: no goodbye to clients) and waits until it is gone. */
  stop(): Promise<void>
}

/**
 * A throwaway `redis-server` on a free loopback port, without persistence and with
 * DEBUG enabled. Returns undefined (printing SKIPPED) when `redis-server` is not
 * installed, outside CI; in CI that fails the run.
 */
export async function privateRedis(): Promise<PrivateRedis | undefined> {
  if (spawnSync('redis-server', ['--version']).status !== 0) {
    if (process.env.CI) throw new Error('redis-server is required in CI for the outage tests')
    console.warn('SKIPPED: redis-server is not installed; the Redis outage tests need a server of their own')
    return undefined
  }
  const port = await freePort()
  let server: ReturnType<typeof spawn> | undefined
  const self: PrivateRedis = {
    url: `redis://127.0.0.1:${port}`,
    port,
    async start() {
      server = spawn(
        'redis-server',
        ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--enable-debug-command', 'yes'],
        { stdio: 'ignore' },
      )
      const probe = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null })
      probe.on('error', () => {})
      for (let attempt = 0; ; attempt++) {
        try {
          await probe.connect()
          await probe.ping()
          probe.disconnect()
          return
        } catch (error) {
          probe.disconnect()
          if (attempt > 100) throw error
          await new Promise((resolve) => setTimeout(resolve, 50))
        }
      }
    },
    async stop() {
      if (server === undefined || server.exitCode !== null || server.signalCode !== null) return
      const gone = new Promise((resolve) => server!.once('exit', resolve))
      server.kill('SIGKILL')
      await gone
    },
  }
  await self.start()
  return self
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

/** A promise to wait on and the function that opens it. */
export function latch(): { wait: Promise<void>; open: () => void } {
  let open!: () => void
  const wait = new Promise<void>((resolve) => (open = resolve))
  return { wait, open }
}

/** The Redis Cluster slot of a key (CLUSTER KEYSLOT), as the store computes it. */
export { clusterSlot } from '../../src/stores/redis/slot.js'
