import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { DeleteTableCommand, DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb'
import { dynamodbStore, type DynamoStore, type DynamoStoreOptions } from '../../src/stores/dynamodb/index.js'
import { HEALTHY_STORE_TIMEOUT_MS } from './contract.js'
import { freePort } from './free-port.js'

/** The DynamoDB Local the tests use (override with IDEM_TEST_DYNAMODB_URL); `.ci/run` starts one here. */
export const DYNAMODB_URL = process.env.IDEM_TEST_DYNAMODB_URL ?? 'http://127.0.0.1:8000'

/**
 * DynamoDB Local keeps one database per access key and region (without -sharedDb):
 * every test and bench uses these, so they all see one database.
 */
export const LOCAL_CREDENTIALS = { region: 'us-east-1', credentials: { accessKeyId: 'idem', secretAccessKey: 'idem' } } as const

/** A client for DynamoDB Local at `endpoint`, which gives up on a dead server quickly. */
export function localClient(endpoint: string, maxAttempts = 3): DynamoDBClient {
  return new DynamoDBClient({ ...LOCAL_CREDENTIALS, endpoint, maxAttempts })
}

export interface TestDynamo {
  client: DynamoDBClient
  endpoint: string
  /** A table of this test file's own, created (with TTL on) by the store. */
  table: string
  /** The store on that table, made by the constructor `testDynamo` was given. */
  store: DynamoStore
  /** Deletes the table, closes the client, and stops a DynamoDB Local this file started. */
  drop(): Promise<void>
}

/**
 * A DynamoDB table of its own for one test file, on the DynamoDB Local at
 * `DYNAMODB_URL`. Outside CI, when none answers there, starts a private one on a free
 * port (stopped by `drop`) if Java and the jar are installed, or returns undefined (the
 * file then skips, and says so); in CI an unreachable DynamoDB Local fails the run.
 * The store is idem's from `src/` unless `makeStore` is another `dynamodbStore` (a
 * conformance kit's).
 */
export async function testDynamo(label: string, makeStore: (options: DynamoStoreOptions) => DynamoStore = dynamodbStore): Promise<TestDynamo | undefined> {
  let endpoint = DYNAMODB_URL
  let local: LocalDynamo | undefined
  if (!(await answers(endpoint))) {
    if (process.env.CI) throw new Error(`DynamoDB Local at ${DYNAMODB_URL} is required in CI (.ci/run starts it)`)
    local = await startDynamoLocal().catch((error: Error) => {
      console.warn(`SKIPPED: DynamoDB Local at ${DYNAMODB_URL} is unreachable and none could be started (${error.message})`)
      return undefined
    })
    if (local === undefined) return undefined
    endpoint = local.endpoint
  }
  const client = localClient(endpoint)
  const table = `idem_test_${label}_${randomBytes(4).toString('hex')}`
  // DynamoDB Local (a JVM) answers a healthy request in milliseconds on an idle machine, but
  // 100 concurrent claims took over 5 s on a loaded one: the timeout bounds a hung server only.
  const store = makeStore({ client, table, timeoutMs: HEALTHY_STORE_TIMEOUT_MS })
  await store.createTable()
  return {
    client,
    endpoint,
    table,
    store,
    async drop() {
      await client.send(new DeleteTableCommand({ TableName: table })).catch(() => {})
      client.destroy()
      await local?.stop()
    },
  }
}

async function answers(endpoint: string): Promise<boolean> {
  const client = localClient(endpoint, 1)
  try {
    await client.send(new ListTablesCommand({ Limit: 1 }), { abortSignal: AbortSignal.timeout(2_000) })
    return true
  } catch {
    return false
  } finally {
    client.destroy()
  }
}

/** Where the `amplify-dynamodb-simulator` dev dependency keeps DynamoDB Local 1.25.1. */
export function dynamoLocalDir(): string {
  const require = createRequire(import.meta.url)
  return join(dirname(require.resolve('amplify-dynamodb-simulator/package.json')), 'emulator')
}

export interface LocalDynamo {
  endpoint: string
  port: number
  child: ChildProcess
  /** Kills the server and waits until it is gone. */
  stop(): Promise<void>
}

/**
 * Starts DynamoDB Local (in memory, telemetry off) on a free loopback port and waits,
 * at most 60 s, until it answers.
 * @throws when Java or the jar is missing, or the server does not come up
 */
export async function startDynamoLocal(): Promise<LocalDynamo> {
  const dir = dynamoLocalDir()
  if (!existsSync(join(dir, 'DynamoDBLocal.jar'))) throw new Error(`no DynamoDBLocal.jar in ${dir}`)
  if (spawnSync('java', ['-version']).status !== 0) throw new Error('java is not installed')
  const port = await freePort()
  const child = spawn(
    'java',
    [`-Djava.library.path=${join(dir, 'DynamoDBLocal_lib')}`, '-jar', join(dir, 'DynamoDBLocal.jar'), '-inMemory', '-disableTelemetry', '-port', String(port)],
    { cwd: dir, stdio: 'ignore', env: { ...process.env, DDB_LOCAL_TELEMETRY: '0' } },
  )
  const endpoint = `http://127.0.0.1:${port}`
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return
    child.kill('SIGKILL')
    await exited
  }
  const until = Date.now() + 60_000
  while (!(await answers(endpoint))) {
    if (child.exitCode !== null || Date.now() > until) {
      await stop()
      throw new Error('DynamoDB Local did not come up within 60 s')
    }
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
  return { endpoint, port, child, stop }
}
