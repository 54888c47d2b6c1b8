import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Cluster, Redis } from 'ioredis'
import { freePort } from './free-port.js'
import { patience } from './patience.js'

/** One `redis-server --cluster-enabled yes` of a test's own cluster. */
export interface ClusterNode {
  port: number
  /** Starts the server (again, after `stop`: it rejoins with its slots from its nodes.conf). */
  start(): Promise<void>
  /** Kills it (SIGKILL: no goodbye to clients) and waits until it is gone. */
  stop(): Promise<void>
}

export interface TestCluster {
  nodes: ClusterNode[]
  /** The seed list a `Cluster` client starts from. */
  seeds: Array<{ host: string; port: number }>
  /** A new ioredis `Cluster` client on it, closed by `stop`. */
  client(options?: ConstructorParameters<typeof Cluster>[1]): Cluster
  /** Waits until every node reports `cluster_state:ok`. */
  healthy(timeoutMs?: number): Promise<void>
  /** Closes the clients, kills every node and removes their files. */
  stop(): Promise<void>
}

/**
 * A Redis Cluster of `masters` masters (no replicas) on free loopback ports, made with
 * `redis-cli --cluster create`, for one test file. Bounded: each step waits at most
 * 30 s. `appendonly` keeps every write on disk (fsync always), so a killed and
 * restarted node comes back with its keys, as a production node with AOF does.
 * `nodeTimeoutMs` is how long a node may be unreachable before the others call it failed
 * (and, with no replica to take over, the whole cluster answers CLUSTERDOWN); a test that
 * restarts a node and expects the others to go on serving sets it above the restart.
 * Returns undefined (printing SKIPPED) when redis-server or redis-cli is missing,
 * outside CI; in CI that fails the run.
 */
export async function startRedisCluster({ masters = 3, appendonly = false, nodeTimeoutMs = 2_000 } = {}): Promise<TestCluster | undefined> {
  for (const tool of ['redis-server', 'redis-cli']) {
    if (spawnSync(tool, ['--version']).status !== 0) {
      if (process.env.CI) throw new Error(`${tool} is required in CI for the Redis Cluster tests`)
      console.warn(`SKIPPED: ${tool} is not installed; the Redis Cluster tests start a cluster of their own`)
      return undefined
    }
  }
  const dir = mkdtempSync(join(tmpdir(), 'idem-redis-cluster-'))
  const clients: Array<Cluster | Redis> = []
  const nodes: ClusterNode[] = []
  for (let i = 0; i < masters; i++) {
    const port = await freePort()
    // The cluster bus would be port + 10000, which nobody checked: give it a free one of its own.
    const busPort = await freePort()
    let server: ChildProcess | undefined
    const node: ClusterNode = {
      port,
      async start() {
        server = spawn(
          'redis-server',
          [
            '--port', String(port), '--bind', '127.0.0.1', '--cluster-enabled', 'yes', '--cluster-port', String(busPort),
            '--cluster-config-file', `nodes-${port}.conf`, '--cluster-node-timeout', String(nodeTimeoutMs),
            '--dir', dir, '--save', '', '--dbfilename', `dump-${port}.rdb`,
            '--appendonly', appendonly ? 'yes' : 'no', '--appendfsync', 'always', '--appendfilename', `aof-${port}.aof`,
            '--appenddirname', `aof-${port}`,
          ],
          { stdio: 'ignore' },
        )
        await until(`redis-server on ${port}`, 30_000, async () => (await ask(port, 'PING')) === 'PONG')
      },
      async stop() {
        if (server === undefined || server.exitCode !== null || server.signalCode !== null) return
        const gone = new Promise((resolve) => server!.once('exit', resolve))
        server.kill('SIGKILL')
        await gone
      },
    }
    await node.start()
    nodes.push(node)
  }
  const create = spawnSync(
    'redis-cli',
    ['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', '0', '--cluster-yes'],
    { encoding: 'utf8', timeout: 30_000 },
  )
  const self: TestCluster = {
    nodes,
    seeds: nodes.map((n) => ({ host: '127.0.0.1', port: n.port })),
    client(options) {
      const client = new Cluster(self.seeds, { enableReadyCheck: true, ...options })
      client.on('error', () => {})
      clients.push(client)
      return client
    },
    async healthy(timeoutMs = 30_000) {
      await until('cluster_state:ok on every node', timeoutMs, async () => {
        for (const node of nodes) if (!(await ask(node.port, 'CLUSTER', 'INFO')).includes('cluster_state:ok')) return false
        return true
      })
    },
    async stop() {
      for (const client of clients) client.disconnect()
      for (const node of nodes) await node.stop()
      rmSync(dir, { recursive: true, force: true })
    },
  }
  if (create.status !== 0) {
    await self.stop()
    throw new Error(`redis-cli --cluster create failed: ${create.stdout}${create.stderr}`)
  }
  await self.healthy()
  return self
}

/** One command on one node, on a connection of its own; '' when the node does not answer. */
async function ask(port: number, ...command: string[]): Promise<string> {
  const probe = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 1_000 })
  probe.on('error', () => {})
  try {
    await probe.connect()
    return String(await probe.call(command[0]!, ...command.slice(1)))
  } catch {
    return ''
  } finally {
    probe.disconnect()
  }
}

async function until(what: string, guardMs: number, check: () => Promise<boolean>): Promise<void> {
  const timeoutMs = patience(guardMs)
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}
