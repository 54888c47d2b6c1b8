// Every guide in docs/guides/ shows its example file verbatim and the output it prints;
// each example runs here against the real services, and its output is what the guide
// claims: one payment across retries, one charge at the provider, one order and one
// email per message, one LLM call per document, what Redis keys keep and lose; the
// operations guide's CLI runs, its CronJobs (real commands, real flags) and alert rules.
import { execFile, execFileSync, spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import pg from 'pg'
import { parse as parseYaml, parseAllDocuments } from 'yaml'
import { beforeAll, describe, expect, it } from 'vitest'
import { migrations } from '../../src/stores/postgres/dialect/migrations.js'
import { compiledExamples, expectPageShows, expectPageShowsOutput, page, PG_URL, root, runExample, servicesUp } from './support.js'

// The TypeScript examples compile once, before the tests that run them (a minute on a loaded machine).
beforeAll(async () => {
  await compiledExamples()
}, 300_000)

const haveDb = await servicesUp('Postgres')
const haveRabbit = haveDb && (await servicesUp('RabbitMQ'))
const haveRedis = haveDb && (await servicesUp('Redis'))

const PAYMENTS = 'docs/guides/payments-api.md'

describe.skipIf(!haveDb)('guide: a payments API on Hono, Express and Fastify with Postgres', () => {
  for (const framework of ['hono', 'express', 'fastify']) {
    it(`${framework}: the failed attempt rolls back with its key, the retry charges once, then replay and 422`, async () => {
      const file = `examples/guides/payments-${framework}.ts`
      expectPageShows(PAYMENTS, file)
      const stdout = await runExample(file)
      const lines = stdout.trim().split('\n')
      expect(lines[0]).toBe('500 {"error":"the ledger went away"}')
      // id 2: the rolled-back attempt's INSERT really ran (it used the sequence's 1) and was undone.
      expect(lines[1]).toBe('201 {"paymentId":"2","amount":1500}')
      expect(lines[2]).toBe('201 (replayed) {"paymentId":"2","amount":1500}')
      expect(JSON.parse(lines[3]!.replace(/^422 /, ''))).toMatchObject({ status: 422, code: 'fingerprint-mismatch' })
      expect(lines[4]).toBe('payments in the table: 1')
      expect(lines).toHaveLength(5)
      expectPageShowsOutput(PAYMENTS, stdout)
    })
  }
})

describe.skipIf(!haveDb)('guide: the Express example on Express 4', () => {
  it('the same lines: the route passes its error to next(err), which Express 4 needs (it does not catch a rejected promise)', async () => {
    const file = 'examples/guides/payments-express.ts'
    expectPageShows(PAYMENTS, file)
    const stdout = await runExample(file, ['--import', join(root, 'test/support/older-majors-loader.mjs')])
    expect(stdout.trim().split('\n')).toEqual([
      '500 {"error":"the ledger went away"}',
      '201 {"paymentId":"2","amount":1500}',
      '201 (replayed) {"paymentId":"2","amount":1500}',
      expect.stringMatching(/^422 \{.*"code":"fingerprint-mismatch"/),
      'payments in the table: 1',
    ])
    expectPageShowsOutput(PAYMENTS, stdout)
  })

  it('the loader resolves `express` to Express 4', async () => {
    const program = "console.log(import.meta.resolve('express'))"
    const loader = ['--import', join(root, 'test/support/older-majors-loader.mjs')]
    const { stdout } = await promisify(execFile)(process.execPath, [...loader, '--input-type=module', '-e', program], { cwd: root })
    expect(stdout.trim()).toMatch(/\/node_modules\/express4\/index\.js$/)
  })
})

describe.skipIf(!haveDb)('guide: calling a payment provider from a handler (leased steps, derived keys)', () => {
  it('the API process dies after the provider charged and after the step was saved: 2 provider requests, 1 charge, 1 payment row', async () => {
    const guide = 'docs/guides/payment-provider.md'
    const file = 'examples/guides/payment-provider.ts'
    expectPageShows(guide, file)
    const stdout = await runExample(file)
    expect(stdout).toBe(
      [
        'attempt 1: no answer, the API process died (after-provider)',
        'attempt 2: no answer, the API process died (after-charge-step)',
        'attempt 3: 201 {"chargeId":"ch_1","amount":1500}',
        'attempt 4: 201 (replayed) {"chargeId":"ch_1","amount":1500}',
        'the provider saw 2 requests and made 1 charge',
        'payments in the table: 1',
        '',
      ].join('\n'),
    )
    expectPageShowsOutput(guide, stdout)
  })
})

describe.skipIf(!haveRabbit)('guide: an idempotent queue consumer with an outbox (RabbitMQ, Postgres)', () => {
  it('a message published twice and redelivered after a crash before the ack: the handler runs once, one order, one email', async () => {
    const guide = 'docs/guides/queue-consumer.md'
    const file = 'examples/guides/queue-consumer.ts'
    expectPageShows(guide, file)
    const stdout = await runExample(file)
    expect(stdout).toBe(
      [
        'worker 1: processed order-1001, then died before its ack',
        'worker 2: duplicate order-1001',
        'worker 2: duplicate order-1001',
        'the handler ran 1 time; orders in the table: 1',
        'emails published: 1 (messageId order-confirmation:order-1001)',
        '',
      ].join('\n'),
    )
    expectPageShowsOutput(guide, stdout)
  })
})

describe.skipIf(!haveDb)('guide: the ingestion pipeline with content ids and a memoised LLM step', () => {
  it('four runs of one document (two racing): one LLM call, the first answer everywhere, no duplicate chunk; a new prompt version adds a row', async () => {
    const guide = 'docs/guides/ingestion-pipeline.md'
    const file = 'examples/guides/ingestion-pipeline.ts'
    expectPageShows(guide, file)
    const stdout = await runExample(file)
    const summary = 'Summary #1: The insured reports water damage…'
    expect(stdout).toBe(
      [
        `delivery: ${summary}`,
        `redelivery: ${summary}`,
        `two workers at once: ${summary} | ${summary}`,
        'LLM calls: 1; chunks: 6; summaries: 1',
        'reconcile: 0 duplicate chunk rows of 6',
        'prompt v4: Summary #2: The insured reports water damage… (LLM calls: 2; summaries: 2)',
        '',
      ].join('\n'),
    )
    expectPageShowsOutput(guide, stdout)
  })
})

describe.skipIf(!haveRedis)('guide: moving keys to Redis', () => {
  it('replays from Redis; the upsert by derived key keeps one payment, the plain INSERT keeps the failed attempt\'s row; keys expire in 24 h', async () => {
    const guide = 'docs/guides/redis-keys.md'
    const file = 'examples/guides/redis-keys.ts'
    expectPageShows(guide, file)
    const stdout = await runExample(file)
    expect(stdout).toBe(
      [
        '500 {"error":"the ledger went away"}',
        '201 {"paymentId":"1","amount":1500}',
        '201 (replayed) {"paymentId":"1","amount":1500}',
        '422 fingerprint-mismatch',
        'payments (upsert by key): 1; ledger (plain INSERT): 2',
        'keys in Redis: 1, expiring in 24 h',
        '',
      ].join('\n'),
    )
    expectPageShowsOutput(guide, stdout)
  })
})

const OPERATIONS = 'docs/guides/operations.md'
const run = promisify(execFile)
const cli = join(root, 'dist/cli/idem.js')

/** Runs the built `idem`, never throwing: the exit code is part of the answer. */
async function idemCli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [cli, ...args], { timeout: 60_000 })
    return { code: 0, stdout, stderr }
  } catch (error) {
    const e = error as { code?: unknown; stdout?: string; stderr?: string }
    if (typeof e.code !== 'number') throw error
    return { code: e.code, stdout: e.stdout ?? '', stderr: e.stderr ?? '' }
  }
}

/** The page's fenced code blocks, in order. */
function codeBlocks(path: string): { lang: string; text: string }[] {
  return [...page(path).matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].map(([, lang, text]) => ({ lang: lang!, text: text!.replace(/\n$/, '') }))
}

interface CronJob {
  apiVersion: string
  kind: string
  metadata: { name: string }
  spec: {
    schedule: string
    concurrencyPolicy?: string
    jobTemplate: { spec: { template: { spec: { restartPolicy: string; containers: { command: string[]; args: string[]; env: { name: string }[] }[] } } } }
  }
}

// What the guide's blocks are, in order: any block added without a check here fails the first test.
const blocks = codeBlocks(OPERATIONS)
const [runBlock, exampleBlock, , cronBlock, rulesBlock, promtoolBlock] = blocks.map((block) => block.text)
const cronJobs = parseAllDocuments(cronBlock ?? '').map((doc) => doc.toJS() as CronJob)

describe('guide: running prune, stats and reconcile in production (the blocks a reader copies)', () => {
  it('has exactly the checked blocks: how to run the example, the example, its output, the CronJobs, the rules, promtool', () => {
    // The last, where failure lines go, is compiled by test/docs/snippets.test.ts.
    expect(blocks.map((block) => block.lang)).toEqual(['sh', 'ts', 'text', 'yaml', 'yaml', 'sh', 'ts'])
    expect(blocks.at(-1)!.text).toContain('idemEvents.setLogger(pino())')
    expect(runBlock).toBe('npm run build\nDATABASE_URL=postgres://postgres@127.0.0.1:5432/test node --experimental-strip-types examples/guides/operations.ts')
    expect(exampleBlock).toBe(readFileSync(join(root, 'examples/guides/operations.ts'), 'utf8').trim())
  })

  it('quotes the three alerts as ops/prometheus/alerts.yml has them (name, expression, for, severity)', () => {
    const shipped = (parseYaml(readFileSync(join(root, 'ops/prometheus/alerts.yml'), 'utf8')) as { groups: { rules: Record<string, unknown>[] }[] }).groups.flatMap((g) => g.rules)
    const quoted = parseYaml(rulesBlock!) as Record<string, unknown>[]
    expect(quoted.map((rule) => rule.alert)).toEqual(['IdemReplayRateHigh', 'IdemKeyConflicts', 'IdemReconcileDuplicates'])
    for (const rule of quoted) {
      const real = shipped.find((r) => r.alert === rule.alert)
      expect(real, `${String(rule.alert)} is in alerts.yml`).toBeDefined()
      for (const [field, value] of Object.entries(rule)) expect(value, `${String(rule.alert)}.${field}`).toEqual(real![field])
      expect('for' in rule, `${String(rule.alert)} shows its "for" if it has one`).toBe('for' in real!)
    }
  })

  it('CronJobs that run real `idem` commands with flags the command has, through `npx --no -- idem`', async () => {
    expect(cronJobs.map((job) => job.metadata.name)).toEqual(['idem-prune', 'idem-reconcile-payments'])
    for (const job of cronJobs) {
      expect(job).toMatchObject({ apiVersion: 'batch/v1', kind: 'CronJob', spec: { concurrencyPolicy: 'Forbid' } })
      expect(job.spec.schedule.split(' ')).toHaveLength(5)
      const { restartPolicy, containers } = job.spec.jobTemplate.spec.template.spec
      expect(restartPolicy).toBe('Never')
      const [container] = containers
      const [npx, no, end, bin, command] = container!.command
      expect([npx, no, end, bin]).toEqual(['npx', '--no', '--', 'idem'])
      // npx --no resolves this package's bin (here the repository's own, in an app its node_modules/.bin).
      const { stdout: help } = await run('npx', ['--no', '--', 'idem', command!, '--help'], { cwd: root, timeout: 60_000 })
      expect(help).toContain(`Usage: idem ${command} `)
      for (const flag of container!.args.filter((arg) => arg.startsWith('--'))) expect(help, `idem ${command} has ${flag}`).toMatch(new RegExp(`^\\s+${flag} `, 'm'))
      // Every $(NAME) in args comes from the container's env.
      for (const [, name] of container!.args.join(' ').matchAll(/\$\((\w+)\)/g)) expect(container!.env.map((e) => e.name)).toContain(name)
    }
  })

  it('the documented `npx --no -- idem --help` and `--version` reach idem, not npm (plain `npx --no idem --version` prints npm\'s)', async () => {
    const operating = readFileSync(join(root, 'docs/operating.md'), 'utf8')
    expect(operating).toContain('`npx --no -- idem --help`')
    expect(operating).toContain('`npx --no -- idem --version`')
    const npx = (args: string[]) => run('npx', args, { cwd: root, timeout: 60_000 }).then(({ stdout }) => stdout.trim())
    const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }
    expect(await npx(['--no', '--', 'idem', '--version'])).toBe(version)
    expect(await npx(['--no', '--', 'idem', '--help'])).toMatch(/^Usage: idem \[options\] \[command\]/)
    // Why the `--`: without it npm answers for itself.
    expect(await npx(['--no', 'idem', '--version'])).not.toBe(version)
  })

  it('ships the rules the promtool lines name (ops/ in package.json "files", listed by npm pack)', async () => {
    expect(promtoolBlock).toBe('promtool check rules node_modules/idem/ops/prometheus/alerts.yml\npromtool test rules node_modules/idem/ops/prometheus/alerts.test.yml')
    const { stdout } = await run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: root, timeout: 60_000, maxBuffer: 16 * 1024 * 1024 })
    const packed = new Set((JSON.parse(stdout) as { files: { path: string }[] }[])[0]!.files.map((file) => file.path))
    const paths = [...promtoolBlock!.matchAll(/node_modules\/idem\/(\S+)/g)].map(([, path]) => path!)
    expect(paths).toEqual(['ops/prometheus/alerts.yml', 'ops/prometheus/alerts.test.yml'])
    for (const path of [...paths, 'ops/grafana/idem-dashboard.json', 'docs/guides/operations.md']) expect(packed.has(path), `npm pack lists ${path}`).toBe(true)
  })

  // test/ops/alerts.test.ts requires promtool in CI and runs these too; here they run as the guide writes them.
  it.skipIf(spawnSync('promtool', ['--version']).status !== 0)('the promtool lines pass on the shipped rules', () => {
    for (const line of promtoolBlock!.split('\n')) {
      const [tool, ...args] = line.replaceAll('node_modules/idem/', `${root}/`).split(' ')
      expect(execFileSync(tool!, args, { encoding: 'utf8' })).toContain('SUCCESS')
    }
  })
})

describe.skipIf(!haveDb)('guide: running prune, stats and reconcile in production (Postgres)', () => {
  it('migrate, stats with rates, prune removing only expired keys, inspect, reconcile finding a duplicate, exit codes 0, 1 and 2', async () => {
    const file = 'examples/guides/operations.ts'
    expectPageShows(OPERATIONS, file)
    const stdout = await runExample(file)
    const version = migrations.at(-1)!.version
    const lines = stdout.trim().split('\n')
    const fingerprintLine = lines.findIndex((line) => line.startsWith('    fingerprint '))
    expect(lines[fingerprintLine]).toMatch(/^ {4}fingerprint {3}[0-9a-f]{64}$/)
    lines[fingerprintLine] = '    fingerprint   <sha-256>'
    expect(lines).toEqual([
      'idem migrate: exit 0',
      // idem migrate says what it will apply before it applies it.
      '  idem: schema at version 0; applying, in one transaction:',
      ...migrations.map((m) => `    version ${m.version}: ${m.description}`),
      `  idem: migrated from version 0 to ${version} (applied ${migrations.map((m) => m.version).join(', ')})`,
      'the service answered: pay-1 201, pay-2 201, pay-3 201, pay-1 201 (replayed), pay-2 422',
      'a nightly job stored 3 keys kept for 1 ms',
      'idem stats --metrics <service>/metrics --json: exit 0',
      '  keys 6 (3 live, 3 expired awaiting prune); by stored status {"201":3,"other":3}',
      '  requests 5: replay rate 20.0%, conflict rate 20.0%',
      'idem prune --batch-size 2 --json: exit 0',
      // idem_keys: 2 + 1 rows; idem_inbox and idem_leases: one empty statement each.
      '  deleted 3 in 4 statements; keys now 3 (3 live, 0 expired)',
      'idem inspect acct_42 pay-1: exit 0',
      'key "pay-1" in scope "acct_42"',
      '  transactional record (idem_keys)',
      '    fingerprint   <sha-256>',
      '    created       <time> (<age> ago)',
      '    expires       <time> (in 24 h)',
      '    stored        HTTP 201, 93 bytes',
      'idem inspect nightly-report 2025-01-01: exit 1',
      'key "2025-01-01" in scope "nightly-report"',
      '  nothing stored: the key was never used here, or it expired and was pruned (an expired key is a new key)',
      'idem reconcile --table payments --columns account,payment_key: exit 0',
      '  payments (account, payment_key): 0 duplicate rows of 3, 0.00% (threshold 0.0100%)',
      'after a backfill wrote pay-1 again: exit 1',
      '  payments (account, payment_key): 1 duplicate row of 4, 25.0% (threshold 0.0100%) — EXCEEDED',
      '    2 rows: {"account":"acct_42","payment_key":"pay-1"}',
      'reconcile() in the service, on its /metrics: idem_reconcile_duplicate_ratio{table="payments"} 0.25',
      'idem prune --batch-sise 500: exit 2',
      "  idem: unknown option '--batch-sise'",
      '  (Did you mean --batch-size?)',
    ])
    expectPageShowsOutput(OPERATIONS, stdout)
  })

  it("the CronJobs' commands run against a migrated schema and exit 0 (prune deletes, reconcile finds a clean table)", async () => {
    const pool = new pg.Pool({ connectionString: PG_URL, max: 1 })
    const schema = `guide_operations_cron_${randomBytes(4).toString('hex')}`
    try {
      await pool.query(`CREATE SCHEMA ${schema}`)
      expect((await idemCli(['migrate', '--postgres', PG_URL, '--schema', schema])).code).toBe(0)
      await pool.query(`CREATE TABLE ${schema}.payments (account text NOT NULL, payment_key text NOT NULL)`)
      await pool.query(`INSERT INTO ${schema}.payments VALUES ('acct_1', 'pay-1'), ('acct_1', 'pay-2')`)
      await pool.query(`INSERT INTO ${schema}.idem_keys (scope, key, fingerprint, outcome, expires_at) VALUES ('s', 'old', 'f', 'null', now() - interval '1 second'), ('s', 'live', 'f', 'null', now() + interval '1 hour')`)
      const results: Record<string, unknown> = {}
      for (const job of cronJobs) {
        const [container] = job.spec.jobTemplate.spec.template.spec.containers
        const args = container!.args.map((arg) => arg.replace(/^\$\(\w+\)$/, PG_URL))
        const ran = await idemCli([container!.command[4]!, ...args, '--schema', schema])
        expect(ran, job.metadata.name).toMatchObject({ code: 0, stderr: '' })
        results[job.metadata.name] = JSON.parse(ran.stdout)
      }
      expect(results['idem-prune']).toMatchObject({ deleted: 1 })
      expect(results['idem-reconcile-payments']).toMatchObject({ table: 'payments', totalRows: 2, duplicateRows: 0, exceeded: false })
      expect((await pool.query(`SELECT key FROM ${schema}.idem_keys`)).rows).toEqual([{ key: 'live' }])
    } finally {
      await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
      await pool.end()
    }
  })
})
