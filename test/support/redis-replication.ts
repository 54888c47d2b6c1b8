import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import { freePort } from './free-port.js'
import { patience } from './patience.js'

/** One `redis-server` of a test's own, on a free loopback port, without persistence. */
export interface RedisNode {
  port: number
  url: string
  /** A command on a connection of its own (for ROLE, INFO, REPLICAOF). */
  ask(...command: Array<string | number>): Promise<unknown>
  /** Kills it (SIGKILL: no goodbye to clients or replicas) and waits until it is gone. */
  kill(): Promise<void>
  /**
   * Stops it (SIGSTOP) and resolves once the kernel reports it stopped: its connections stay
   * open and what is sent to it waits unread, so a replica stays connected and acknowledges
   * nothing. `resume` (SIGCONT) wakes it.
   */
  pause(): Promise<void>
  resume(): Promise<void>
}

/** The servers one test started, for replication and failover scenarios. */
export interface RedisReplication {
  /** Starts a server; with `replicaOf`, as that server's replica, resolved once it is in sync. */
  start(options?: { replicaOf?: RedisNode }): Promise<RedisNode>
  /** Promotes a replica: `REPLICAOF NO ONE`, after which nothing its old primary writes reaches it. */
  promote(replica: RedisNode): Promise<void>
  /** Resolves once `replica` has applied everything `primary` wrote so far (by their replication offsets). */
  caughtUp(primary: RedisNode, replica: RedisNode): Promise<void>
  /** Kills every server it started and removes their files. */
  stop(): Promise<void>
}

// A test that fails half-way leaves no server behind it.
const running = new Set<ChildProcess>()
process.once('exit', () => {
  for (const server of running) server.kill('SIGKILL')
})

/**
 * Starts Redis servers for replication tests: no persistence, diskless full syncs
 * without Redis's default 5 s delay (`repl-diskless-sync-delay 0`), so a replica is in
 * sync within milliseconds. Returns undefined (printing SKIPPED) when `redis-server` is
 * not installed, outside CI; in CI that fails the run.
 */
export function redisReplication(): RedisReplication | undefined {
  if (spawnSync('redis-server', ['--version']).status !== 0) {
    if (process.env.CI) throw new Error('redis-server is required in CI for the replication tests')
    console.warn('SKIPPED: redis-server is not installed; the replication tests start servers of their own')
    return undefined
  }
  const servers: ChildProcess[] = []
  const dirs: string[] = []
  const self: RedisReplication = {
    async start({ replicaOf } = {}) {
      const port = await freePort()
      // A replica writes the snapshot it receives to its folder, persistence off or not.
      const dir = mkdtempSync(join(tmpdir(), 'idem-redis-replication-'))
      dirs.push(dir)
      const server = spawn(
        'redis-server',
        [
          '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir,
          '--repl-diskless-sync', 'yes', '--repl-diskless-sync-delay', '0',
          ...(replicaOf === undefined ? [] : ['--replicaof', '127.0.0.1', String(replicaOf.port)]),
        ],
        { stdio: 'ignore' },
      )
      servers.push(server)
      running.add(server)
      server.once('exit', () => running.delete(server))
      const node: RedisNode = {
        port,
        url: `redis://127.0.0.1:${port}`,
        ask: (...command) => ask(port, command),
        async kill() {
          if (server.exitCode !== null || server.signalCode !== null) return
          const gone = new Promise((resolve) => server.once('exit', resolve))
          server.kill('SIGKILL')
          await gone
        },
        async pause() {
          server.kill('SIGSTOP')
          await until(`redis-server on ${port} stopped`, async () => stopped(server) !== false)
        },
        async resume() {
          server.kill('SIGCONT')
          await until(`redis-server on ${port} running`, async () => stopped(server) !== true)
        },
      }
      await until(`redis-server on ${port}`, async () => (await ask(port, ['PING']).catch(() => '')) === 'PONG')
      if (replicaOf !== undefined) await self.caughtUp(replicaOf, node)
      return node
    },
    async promote(replica) {
      await replica.ask('REPLICAOF', 'NO', 'ONE')
      await until(`${replica.port} a primary`, async () => ((await replica.ask('ROLE')) as string[])[0] === 'master')
    },
    async caughtUp(primary, replica) {
      // The primary counts a replica's acknowledgements (for WAIT) only once it calls it online.
      await until(`${replica.port} in sync with ${primary.port}`, async () => {
        const [theirs, mine] = await Promise.all([primary.ask('INFO', 'replication'), replica.ask('INFO', 'replication')])
        const offset = field(theirs, 'master_repl_offset')
        const listed = new RegExp(`^slave\\d+:ip=[^,]*,port=${replica.port},state=online,offset=${offset},`, 'm').test(String(theirs))
        return listed && field(mine, 'master_link_status') === 'up' && field(mine, 'slave_repl_offset') === offset
      })
    },
    async stop() {
      await Promise.all(
        servers.map(async (server) => {
          if (server.exitCode !== null || server.signalCode !== null) return
          const gone = new Promise((resolve) => server.once('exit', resolve))
          server.kill('SIGKILL')
          await gone
        }),
      )
      for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
    },
  }
  return self
}

/**
 * Whether the kernel reports the process stopped (state T in /proc/<pid>/stat); undefined
 * where there is no /proc to ask, and the signal is then trusted.
 */
function stopped(server: ChildProcess): boolean | undefined {
  const stat = `/proc/${server.pid}/stat`
  if (!existsSync(stat)) return undefined
  // pid (comm) state …: comm may hold spaces or parentheses, so read after the last ')'.
  const text = readFileSync(stat, 'utf8')
  return text.charAt(text.lastIndexOf(')') + 2) === 'T'
}

function field(info: unknown, name: string): string | undefined {
  return new RegExp(`^${name}:(.*)$`, 'm').exec(String(info))?.[1]?.trim()
}

async function ask(port: number, command: Array<string | number>): Promise<unknown> {
  const probe = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 1_000 })
  probe.on('error', () => {})
  try {
    await probe.connect()
    return await probe.call(String(command[0]), ...command.slice(1))
  } finally {
    probe.disconnect()
  }
}

async function until(what: string, check: () => Promise<boolean>, guardMs = 20_000): Promise<void> {
  const timeoutMs = patience(guardMs)
  const deadline = Date.now() + timeoutMs
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}
