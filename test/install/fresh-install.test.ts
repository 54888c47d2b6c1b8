// FRESH-INSTALL TEST: needs the npm registry, so it is not part of `npm test`;
// `npm run test:install` runs it, and so does .ci/run after the tests. What a new user
// does: `npm pack` this package and install the tarball into empty projects, with no
// install flags (no --legacy-peer-deps; the peers' own dependencies may warn about
// engines, as cookie@2 under Fastify 5 and the newest NATS client do on Node 20, but
// idem's engines are enforced in the first project):
//
// - beside express@4, an ESM app through one request and its replay, and the README's
//   first example;
// - `low`: a Nest 10 app as Nest 10's CLI makes it (CommonJS, `module: commonjs`, the
//   node10 resolution, the oldest TypeScript it generates) beside the LOWEST version of
//   every peer range in package.json;
// - `high`: a Nest 11 app as Nest 11's CLI makes it (`module: nodenext` in a CommonJS
//   package, the newest TypeScript 5) beside the HIGHEST version of every peer range.
//
// Both compile test/install/app/main.ts with `tsc` and run it: every `idem/*` import is a
// require() of an ES module, and each peer is used against the real service (Postgres,
// Redis, RabbitMQ, NATS, DynamoDB Local; SQS on fauxqs and Kafka on librdkafka's mock
// cluster through kcat, both started here), each HTTP front end serving one replay. The
// types are also checked under node16 (low) and bundler (high) resolution. It catches
// what the repository's own install hides: a peer range that refuses what users run
// (ERESOLVE), a require condition or typesVersions entry missing, a dependency missing
// from `dependencies`, a file missing from `files`.
import { execFile } from 'node:child_process'
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startKafkaMock, type KafkaMock } from '../support/kafka-mock.js'

const run = promisify(execFile)
const root = new URL('../..', import.meta.url).pathname
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { peerDependencies: Record<string, string> }
// Bounded: a cached install takes seconds; a cold one, with better-sqlite3's native
// build in two projects at once (its prebuilt binaries cannot be fetched here), a few
// minutes on an idle machine. The limit leaves room for a loaded one.
const INSTALL_MS = 900_000

// The parent npm's settings (npm test passes them down as npm_config_*) must not shape
// the user's install; the cache is kept so that --prefer-offline has something to use.
function userEnvironment(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {}
  for (const [name, value] of Object.entries(process.env)) {
    if (!name.toLowerCase().startsWith('npm_') || name.toLowerCase() === 'npm_config_cache') env[name] = value
  }
  return env
}

/** The lowest version a range admits: ranges are written lowest first (`^4.17.0 || ^5.0.0`, `>=11 <13`). */
function lowest(range: string): string {
  const first = /(\d+)(?:\.(\d+))?(?:\.(\d+))?/.exec(range)
  if (first === null) throw new Error(`no version in the range ${range}`)
  return `${first[1]}.${first[2] ?? 0}.${first[3] ?? 0}`
}

// Packages a user installs beside the peers: the NATS transport the JetStream client
// runs on (the same release line), the types Nest's CLI adds, and its TypeScript.
const LOW_EXTRAS = ['@nats-io/transport-node@3.0.0', '@types/node@20', 'typescript@5.1.6']
const HIGH_EXTRAS = ['@nats-io/transport-node@^3.0.0', '@types/node@20', 'typescript@5']

// What Nest's CLI writes as tsconfig.json (@nestjs/schematics, application template).
const NEST10_TSCONFIG = {
  compilerOptions: {
    module: 'commonjs',
    declaration: true,
    removeComments: true,
    emitDecoratorMetadata: true,
    experimentalDecorators: true,
    allowSyntheticDefaultImports: true,
    target: 'ES2021',
    sourceMap: true,
    outDir: './dist',
    baseUrl: './',
    incremental: true,
    skipLibCheck: true,
    strictNullChecks: false,
    noImplicitAny: false,
    strictBindCallApply: false,
    forceConsistentCasingInFileNames: false,
    noFallthroughCasesInSwitch: false,
  },
}
const NEST11_TSCONFIG = {
  compilerOptions: {
    module: 'nodenext',
    moduleResolution: 'nodenext',
    resolvePackageJsonExports: true,
    esModuleInterop: true,
    isolatedModules: true,
    declaration: true,
    removeComments: true,
    emitDecoratorMetadata: true,
    experimentalDecorators: true,
    allowSyntheticDefaultImports: true,
    target: 'ES2023',
    sourceMap: true,
    outDir: './dist',
    baseUrl: './',
    incremental: true,
    skipLibCheck: true,
    strictNullChecks: true,
    forceConsistentCasingInFileNames: true,
    noImplicitAny: false,
    strictBindCallApply: false,
    noFallthroughCasesInSwitch: false,
  },
}

const EXPRESS4_APP = `
import express from 'express'
import { idempotency } from 'idem/express'
import { memoryStore } from 'idem/memory'

let orders = 0
const app = express()
app.use(idempotency({ store: memoryStore() }))
app.use(express.json())
app.post('/orders', (req, res) => res.status(201).json({ order: ++orders, amount: req.body.amount }))
const server = app.listen(0, '127.0.0.1', async () => {
  const url = 'http://127.0.0.1:' + server.address().port + '/orders'
  const send = () => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': '"fresh-1"' }, body: '{"amount":5}' })
  for (const response of [await send(), await send()]) {
    console.log(response.status, response.headers.get('idempotent-replayed') ?? '-', await response.text())
  }
  console.log('express', (await import('express/package.json', { with: { type: 'json' } })).default.version)
  server.close()
})
`

const dir = mkdtempSync(join(tmpdir(), 'idem-fresh-install-'))
const env = userEnvironment()
let tarball: string
let sqs: { address: string; stop(): Promise<void> } | undefined
let kafka: KafkaMock | undefined

async function install(project: string, packages: string[], flags: string[] = []): Promise<void> {
  await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', ...flags, tarball, ...packages], {
    cwd: project,
    // better-sqlite3 compiles SQLite when no prebuilt binary can be fetched: unoptimised,
    // it takes a third of the time, and the test needs it to work, not to be fast.
    env: { ...env, CFLAGS: '-O0', CXXFLAGS: '-O0' },
    timeout: INSTALL_MS,
    maxBuffer: 16 * 1024 * 1024,
  })
}

/** A project as `nest new` leaves it (CommonJS package.json, Nest's tsconfig), with the app in src/. */
function nestProject(name: string, tsconfig: object, extraTsconfigs: Record<string, object>): string {
  const project = join(dir, name)
  mkdirSync(join(project, 'src'), { recursive: true })
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: `fresh-${name}`, version: '0.0.1', private: true }))
  writeFileSync(join(project, 'tsconfig.json'), JSON.stringify(tsconfig, null, 2))
  for (const [file, config] of Object.entries(extraTsconfigs)) writeFileSync(join(project, file), JSON.stringify(config, null, 2))
  copyFileSync(join(root, 'test/install/app/main.ts'), join(project, 'src/main.ts'))
  return project
}

/** Compiles with the project's own TypeScript; its errors (on stdout) make the message. */
async function tsc(project: string, config: string): Promise<void> {
  await run(join(project, 'node_modules/.bin/tsc'), ['-p', config], { cwd: project, env }).catch((error: { stdout?: string }) => {
    throw new Error(`tsc -p ${config} failed in ${project}:\n${error.stdout ?? String(error)}`)
  })
}

/** The app's lines, one per peer: `<peer>@<version> <what it saw>`. */
async function runApp(project: string): Promise<Map<string, { version: string; saw: string }>> {
  const { stdout } = await run(process.execPath, ['dist/main.js'], {
    cwd: project,
    timeout: 120_000,
    env: {
      ...env,
      IDEM_TEST_PG_URL: process.env.IDEM_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
      IDEM_TEST_MYSQL_URL: process.env.IDEM_TEST_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test',
      IDEM_TEST_REDIS_URL: process.env.IDEM_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
      IDEM_TEST_AMQP_URL: process.env.IDEM_TEST_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672',
      IDEM_TEST_NATS_URL: process.env.IDEM_TEST_NATS_URL ?? 'nats://127.0.0.1:4222',
      IDEM_TEST_DYNAMODB_URL: process.env.IDEM_TEST_DYNAMODB_URL ?? 'http://127.0.0.1:8000',
      IDEM_TEST_SQS_URL: sqs!.address,
      IDEM_TEST_KAFKA_BROKERS: kafka!.brokers.join(','),
    },
  })
  const lines = new Map<string, { version: string; saw: string }>()
  for (const line of stdout.trim().split('\n')) {
    const match = /^(@?[^@\s]+)@(\S+) (.*)$/.exec(line)
    if (match !== null) lines.set(match[1]!, { version: match[2]!, saw: match[3]! })
  }
  return lines
}

const REPLAY = '201 - {"order":1,"amount":5} | 201 true {"order":1,"amount":5}'
const RAN_ONCE = 'ran 1, replayed true, value 1/1'

/** What the app must print for every peer, at the version the project installed. */
function expectEveryPeer(lines: Map<string, { version: string; saw: string }>, versionOf: (peer: string) => string): void {
  const saw = (peer: string) => {
    const line = lines.get(peer)
    expect(line, `the app printed nothing for ${peer}`).toBeDefined()
    expect(line!.version, peer).toBe(versionOf(peer))
    return line!.saw
  }
  expect(saw('@nestjs/platform-express')).toBe(REPLAY)
  expect(saw('@nestjs/platform-fastify')).toBe(REPLAY)
  for (const front of ['express', 'koa', 'fastify', 'hono']) expect(saw(front), front).toBe(REPLAY)
  for (const store of ['pg', 'mysql2', 'better-sqlite3', 'ioredis', 'iovalkey', 'redis', '@aws-sdk/client-dynamodb']) expect(saw(store), store).toBe(RAN_ONCE)
  expect(saw('amqplib')).toBe('2 delivered, handled 1')
  expect(saw('@nats-io/jetstream')).toBe('1 delivered, handled 1')
  expect(saw('@aws-sdk/client-sqs')).toBe('2 delivered, handled 1')
  expect(saw('kafkajs')).toBe('2 delivered, handled 1')
  expect(saw('bullmq')).toBe('2 completed, handled 1')
  expect(saw('prom-client')).toBe('exports the fresh outcome')
  expect(saw('@opentelemetry/api')).toBe('instruments made, the run recorded')
}

const installedVersion = (project: string) => (name: string) =>
  (JSON.parse(readFileSync(join(project, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version

const peers = Object.keys(pkg.peerDependencies)

describe('fresh install from the packed tarball', () => {
  beforeAll(async () => {
    const { stdout: packed } = await run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', dir], { cwd: root, env, maxBuffer: 16 * 1024 * 1024 })
    tarball = join(dir, (JSON.parse(packed) as Array<{ filename: string }>)[0]!.filename)
    const { startFauxqs } = (await import('fauxqs')) as { startFauxqs: (o: object) => Promise<{ address: string; stop(): Promise<void> }> }
    sqs = await startFauxqs({ port: 0, host: '127.0.0.1', logger: false })
    // No skip without kcat, in CI or out: like every other service here, the app needs it.
    kafka = await startKafkaMock().catch((error: Error) => {
      throw new Error(`test:install runs the Kafka part on librdkafka's mock cluster through kcat (apt-get install kcat): ${error.message}`)
    })
  }, 120_000)
  afterAll(async () => {
    await sqs?.stop()
    await kafka?.stop()
    // IDEM_INSTALL_KEEP=1 keeps the projects to look into.
    if (process.env.IDEM_INSTALL_KEEP === undefined) rmSync(dir, { recursive: true, force: true })
    else console.log(`fresh-install projects kept in ${dir}`)
  }, 120_000)

  it('the app covers every peer range', () => {
    const covered = ['@nestjs/common', '@nestjs/core', '@nestjs/platform-express', '@nestjs/platform-fastify', 'reflect-metadata', 'rxjs', 'express', 'koa', 'fastify', 'hono', 'pg', 'mysql2', 'better-sqlite3', 'ioredis', 'iovalkey', 'redis', '@aws-sdk/client-dynamodb', 'amqplib', '@nats-io/jetstream', '@aws-sdk/client-sqs', 'kafkajs', 'bullmq', 'prom-client', '@opentelemetry/api']
    expect(peers.filter((peer) => !covered.includes(peer))).toEqual([])
    expect(lowest('^4.17.0 || ^5.0.0')).toBe('4.17.0')
    expect(lowest('>=11 <13')).toBe('11.0.0')
  })

  // The three projects install at once: the npm cache is safe to share, and most of an
  // install is waiting on the registry or on better-sqlite3's compiler.
  const installs = new Map<string, Promise<string>>()
  const started = (name: string, make: () => Promise<string>) => {
    if (!installs.has(name)) {
      const made = make()
      made.catch(() => {}) // reported by the test that awaits it
      installs.set(name, made)
    }
    return installs.get(name)!
  }
  const express4 = () =>
    started('express4', async () => {
      const project = join(dir, 'express4')
      mkdirSync(project)
      writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'fresh-app', version: '1.0.0', private: true, type: 'module' }))
      writeFileSync(join(project, 'app.mjs'), EXPRESS4_APP)
      // --engine-strict: idem's own engines must admit this Node.
      await install(project, ['express@4'], ['--engine-strict'])
      return project
    })
  const low = () =>
    started('low', async () => {
      const project = nestProject('low', NEST10_TSCONFIG, {
        // node16 resolution in the same CommonJS project: the require condition's .d.cts.
        'tsconfig.node16.json': { extends: './tsconfig.json', compilerOptions: { module: 'node16', moduleResolution: 'node16', noEmit: true, incremental: false } },
      })
      await install(project, [...peers.map((peer) => `${peer}@${lowest(pkg.peerDependencies[peer]!)}`), ...LOW_EXTRAS])
      return project
    })
  const high = () =>
    started('high', async () => {
      const project = nestProject('high', NEST11_TSCONFIG, {
        'tsconfig.bundler.json': { extends: './tsconfig.json', compilerOptions: { module: 'preserve', moduleResolution: 'bundler', noEmit: true, incremental: false } },
      })
      await install(project, [...peers.map((peer) => `${peer}@${pkg.peerDependencies[peer]!}`), ...HIGH_EXTRAS])
      return project
    })

  it(
    "beside express@4: installs and replays; the README's first example runs as shown",
    async () => {
      void low()
      void high()
      const project = await express4()
      const { stdout } = await run(process.execPath, ['app.mjs'], { cwd: project, env, timeout: 30_000 })
      const lines = stdout.trim().split('\n')
      expect(lines[0]).toBe('201 - {"order":1,"amount":5}')
      expect(lines[1]).toBe('201 true {"order":1,"amount":5}')
      expect(lines[2]).toMatch(/^express 4\./)
      // The README's first example, as a user copies it into the project.
      copyFileSync(join(root, 'examples/first.mjs'), join(project, 'first.mjs'))
      const first = await run(process.execPath, ['first.mjs'], { cwd: project, env, timeout: 30_000 })
      expect(first.stdout).toBe(
        'attempt 1: { value: { chargeId: 1 }, replayed: false, stored: true }\n' +
          'attempt 2: { value: { chargeId: 1 }, replayed: true, stored: true }\n' +
          'attempt 3: { value: { chargeId: 1 }, replayed: true, stored: true }\n',
      )
    },
    INSTALL_MS + 60_000,
  )

  it(
    'a Nest 10 CommonJS app beside the lowest version of every peer: compiles (node10, node16) and replays',
    async () => {
      const project = await low()
      const version = installedVersion(project)
      for (const peer of peers) expect(version(peer), peer).toBe(lowest(pkg.peerDependencies[peer]!))
      await tsc(project, 'tsconfig.json')
      await tsc(project, 'tsconfig.node16.json')
      expectEveryPeer(await runApp(project), version)
    },
    INSTALL_MS + 180_000,
  )

  it(
    'a Nest 11 app beside the highest version of every peer: compiles (nodenext, bundler) and replays',
    async () => {
      const project = await high()
      const version = installedVersion(project)
      expect(version('@nestjs/core')).toMatch(/^11\./)
      await tsc(project, 'tsconfig.json')
      await tsc(project, 'tsconfig.bundler.json')
      expectEveryPeer(await runApp(project), version)
    },
    INSTALL_MS + 180_000,
  )
})
