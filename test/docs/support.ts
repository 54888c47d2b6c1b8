import { execFile } from 'node:child_process'
import { cpSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import amqplib from 'amqplib'
import { Redis } from 'ioredis'
import pg from 'pg'
import { expect } from 'vitest'
import { DYNAMODB_URL } from '../support/dynamodb.js'
import { PG_URL } from '../support/postgres.js'
import { packedProject } from './packed-project.js'

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
 * What a strict app compiles the TypeScript examples with; `erasableSyntaxOnly` and
 * `verbatimModuleSyntax` keep them runnable as they are by Node's type stripping
 * (`node --experimental-strip-types`, 22.6+), Bun and Deno.
 */
const EXAMPLES_TSCONFIG = {
  compilerOptions: {
    strict: true,
    module: 'nodenext',
    moduleResolution: 'nodenext',
    target: 'es2022',
    types: ['node'],
    skipLibCheck: true,
    erasableSyntaxOnly: true,
    verbatimModuleSyntax: true,
    noEmitOnError: true,
    rootDir: 'examples',
    outDir: 'build',
  },
  include: ['examples'],
}

let compiled: Promise<string> | undefined

/**
 * The TypeScript examples (examples/*.ts, examples/guides/*.ts, examples/webhooks/*.ts) compiled under
 * `strict` in a fresh project where idem is installed from its packed tarball, once per
 * test file: the project's directory, with the JavaScript under build/. A type error in
 * any example fails every test that runs one, with tsc's message.
 */
export function compiledExamples(): Promise<string> {
  compiled ??= (async () => {
    const project = await packedProject('examples')
    process.once('exit', () => project.remove())
    for (const dir of ['guides', 'webhooks']) {
      cpSync(join(root, 'examples', dir), join(project.dir, 'examples', dir), { recursive: true, filter: (src) => !/\.(mjs|js)$/.test(src) })
    }
    for (const file of readdirSync(join(root, 'examples')).filter((name) => name.endsWith('.ts'))) cpSync(join(root, 'examples', file), join(project.dir, 'examples', file))
    writeFileSync(join(project.dir, 'tsconfig.json'), JSON.stringify(EXAMPLES_TSCONFIG, null, 2))
    await run(join(root, 'node_modules/.bin/tsc'), ['-p', 'tsconfig.json', '--pretty', 'false'], { cwd: project.dir, timeout: 240_000 }).catch((error: { stdout?: string }) => {
      throw new Error(`the TypeScript examples do not compile under strict:\n${error.stdout ?? String(error)}`)
    })
    return project.dir
  })()
  return compiled
}

/**
 * Runs an example file with the test services' URLs; it must exit 0 and write nothing to
 * stderr but idem's failure lines, exactly the ones `failures` names by code, in order
 * (each refused webhook delivery writes `invalid-signature`, each dead letter
 * `dead-lettered`…). `nodeArgs` go before the file (`--import` a loader, say). A `.ts`
 * example runs as compiled by `compiledExamples`, against the packed package.
 */
export async function runExample(file: string, nodeArgs: readonly string[] = [], failures: readonly string[] = []): Promise<string> {
  // The AWS SDK warns on stderr, once per process, that Node 20 support ends in 2027.
  const env = { ...process.env, DATABASE_URL: PG_URL, AMQP_URL, REDIS_URL, DYNAMODB_URL, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' }
  const program = file.endsWith('.ts') ? join(await compiledExamples(), file.replace(/^examples\//, 'build/').replace(/\.ts$/, '.js')) : join(root, file)
  const { stdout, stderr } = await run(process.execPath, [...nodeArgs, program], { env, timeout: 60_000 })
  expect(failureCodes(stderr), `${file}'s stderr:\n${stderr}`).toEqual(failures)
  return stdout
}

/** The codes of idem's failure lines on `stderr` (one JSON object each); any other line fails the test. */
function failureCodes(stderr: string): string[] {
  return stderr
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      const parsed = (line.startsWith('{') ? JSON.parse(line) : {}) as { code?: string; msg?: string }
      expect(parsed.msg?.startsWith('idem: ') && typeof parsed.code === 'string', `an idem failure line on stderr: ${line}`).toBe(true)
      return parsed.code!
    })
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
