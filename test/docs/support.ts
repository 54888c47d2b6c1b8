import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import amqplib from 'amqplib'
import { Redis } from 'ioredis'
import pg from 'pg'
import { expect } from 'vitest'
import { DYNAMODB_URL } from '../support/dynamodb.js'
import { PG_URL } from '../support/postgres.js'

export const root = new URL('../..', import.meta.url).pathname
export const AMQP_URL = process.env.IDEM_TEST_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672'
export const REDIS_URL = process.env.IDEM_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'
export { PG_URL }

/** A docs page, read once per call: tests compare it with files and with real output. */
export function page(path: string): string {
  return readFileSync(join(root, path), 'utf8')
}

/** The page shows the file whole, so what a reader copies is what the test runs. */
export function expectPageShows(path: string, file: string): void {
  const source = readFileSync(join(root, file), 'utf8').trim()
  expect(page(path).includes(source), `${path} must show ${file} verbatim`).toBe(true)
}

/** The page shows this output whole (in its text block), so it cannot drift from what the example prints. */
export function expectPageShowsOutput(path: string, stdout: string): void {
  expect(page(path).includes(`\`\`\`text\n${stdout.trim()}\n\`\`\``), `${path} must show the example's output:\n${stdout}`).toBe(true)
}

const run = promisify(execFile)

/** The paths `npm pack` puts in the package, as a user's node_modules/idem holds them (built files as they are now). */
export async function packedFiles(): Promise<Set<string>> {
  const { stdout } = await run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: root, maxBuffer: 16 * 1024 * 1024 })
  return new Set((JSON.parse(stdout) as Array<{ files: Array<{ path: string }> }>)[0]!.files.map((file) => file.path))
}

/**
 * Runs an example file with the test services' URLs; it must exit 0 and write nothing to
 * stderr. `nodeArgs` go before the file (`--import` a loader, say).
 */
export async function runExample(file: string, nodeArgs: readonly string[] = []): Promise<string> {
  // The AWS SDK warns on stderr, once per process, that Node 20 support ends in 2027.
  const env = { ...process.env, DATABASE_URL: PG_URL, AMQP_URL, REDIS_URL, DYNAMODB_URL, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' }
  const { stdout, stderr } = await run(process.execPath, [...nodeArgs, join(root, file)], { env, timeout: 60_000 })
  expect(stderr).toBe('')
  return stdout
}

const probes: Record<string, [string, () => Promise<void>]> = {
  Postgres: [
    PG_URL,
    async () => {
      const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3_000 })
      await client.connect()
      await client.end()
    },
  ],
  RabbitMQ: [AMQP_URL, async () => void (await (await amqplib.connect(AMQP_URL, { timeout: 3_000 })).close())],
  Redis: [
    REDIS_URL,
    async () => {
      const redis = new Redis(REDIS_URL, { lazyConnect: true, connectTimeout: 3_000, maxRetriesPerRequest: 1, retryStrategy: () => null })
      try {
        await redis.connect()
        await redis.ping()
      } finally {
        redis.disconnect()
      }
    },
  ],
}

/**
 * True when every named service answers. Outside CI a missing one makes the caller skip
 * (and says so with a SKIPPED line); with CI set it fails the run, never skips.
 */
export async function servicesUp(...names: Array<keyof typeof probes>): Promise<boolean> {
  for (const name of names) {
    const [url, probe] = probes[name]!
    try {
      await probe()
    } catch (error) {
      if (process.env.CI) throw new Error(`${name} at ${url} is required in CI: ${(error as Error).message}`)
      console.warn(`SKIPPED: ${name} at ${url} is unreachable (${(error as Error).message})`)
      return false
    }
  }
  return true
}
