// The architecture's rules on imports (.dependency-cruiser.cjs) hold for src/, and every
// one of them catches the import it forbids: the rules are checked, not just written down.
// Then what imports cannot show: the core's text names nothing of HTTP or of a front end's
// events, and the library writes to the console in one place.
import { execFile } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, describe, expect, it } from 'vitest'
import type { IdemEvent, IdemEventTypes } from '../src/index.js'

const run = promisify(execFile)
const root = new URL('..', import.meta.url).pathname
const config = join(root, '.dependency-cruiser.cjs')
const depcruise = join(root, 'node_modules/.bin/depcruise')

interface Violation {
  rule: { name: string }
  from: string
  to: string
}

/** Cruises `src` of `cwd` with the project's rules; returns the violations. */
async function violations(cwd: string): Promise<Violation[]> {
  const { stdout } = await run(depcruise, ['src', '--config', config, '--output-type', 'json'], { cwd, maxBuffer: 64 * 1024 * 1024 }).catch(
    // depcruise exits non-zero when it finds violations; its JSON is still on stdout.
    (error: { stdout?: string }) => ({ stdout: error.stdout ?? '' }),
  )
  return (JSON.parse(stdout) as { summary: { violations: Violation[] } }).summary.violations
}

/**
 * One forbidden import per rule: `from` imports `to`, and only the named rule forbids it.
 * Planted in a throwaway tree, never in src.
 */
const PLANTED: { rule: string; from: string; to: string }[] = [
  { rule: 'core-is-pure', from: 'src/core/engine.ts', to: 'src/http/problem.ts' },
  // The engines drive stores through the ports, never a store itself.
  { rule: 'core-is-pure', from: 'src/core/leased/engine.ts', to: 'src/stores/redis/store.ts' },
  // The core knows no HTTP: not the request fingerprint, not the header both ends speak.
  { rule: 'core-is-pure', from: 'src/core/fingerprint.ts', to: 'src/http/request-fingerprint.ts' },
  { rule: 'core-is-pure', from: 'src/core/identity.ts', to: 'src/headers/idempotency-key.ts' },
  { rule: 'headers-are-shared', from: 'src/headers/idempotency-key.ts', to: 'src/http/handler.ts' },
  { rule: 'front-ends-know-no-driver', from: 'src/queue/inbox.ts', to: 'src/stores/postgres/store.ts' },
  { rule: 'queue-knows-no-http', from: 'src/queue/outbox.ts', to: 'src/http/webhooks/receiver.ts' },
  { rule: 'data-stands-alone', from: 'src/data/once.ts', to: 'src/queue/dispatcher.ts' },
  { rule: 'http-is-a-front-end', from: 'src/http/handler.ts', to: 'src/cli/idem.ts' },
  { rule: 'lambda-is-a-front-end', from: 'src/lambda/sqs-batch.ts', to: 'src/ops/recorder.ts' },
  { rule: 'front-ends-know-no-driver', from: 'src/lambda/engine.ts', to: 'src/stores/dynamodb/store.ts' },
  { rule: 'client-has-no-server-code', from: 'src/client/client.ts', to: 'src/queue/consumer.ts' },
  { rule: 'ports-are-contracts', from: 'src/ports/inbox-table.ts', to: 'src/queue/payload.ts' },
  // A port is below the engines: it knows core's errors, not the engine that drives it.
  { rule: 'ports-are-contracts', from: 'src/ports/key-store.ts', to: 'src/core/engine.ts' },
  { rule: 'ports-are-contracts', from: 'src/ports/leased-store.ts', to: 'src/core/fingerprint.ts' },
  { rule: 'stores-implement-ports-only', from: 'src/stores/sqlite/store.ts', to: 'src/http/options.ts' },
  // No whitelist: a store reaches the queue's and data's contracts in ports/, never their folders.
  { rule: 'stores-implement-ports-only', from: 'src/stores/dynamodb/store.ts', to: 'src/data/reconcile.ts' },
  // A store reaches core through its errors only: not an engine, not the key syntax, not the event stream.
  { rule: 'stores-implement-ports-only', from: 'src/stores/memory/store.ts', to: 'src/core/engine.ts' },
  { rule: 'stores-implement-ports-only', from: 'src/stores/sqlite/store.ts', to: 'src/core/identity.ts' },
  { rule: 'stores-implement-ports-only', from: 'src/stores/postgres/driver/pool-timeout.ts', to: 'src/core/events.ts' },
  { rule: 'one-driver-per-store', from: 'src/stores/redis/store.ts', to: 'src/stores/memory/store.ts' },
  // The dialect is pure: it reaches neither the driver nor the store's operations that run it.
  { rule: 'dialect-knows-no-driver', from: 'src/stores/postgres/dialect/keys.ts', to: 'src/stores/postgres/driver/held-client.ts' },
  { rule: 'dialect-knows-no-driver', from: 'src/stores/postgres/dialect/migrations.ts', to: 'src/stores/postgres/store.ts' },
  { rule: 'dialect-knows-no-driver', from: 'src/stores/sqlite/dialect/keys.ts', to: 'src/stores/sqlite/driver/store-driver.ts' },
  // The SQL stores' protocol is written over its interfaces: no dialect, no driver, no store.
  { rule: 'one-driver-per-store', from: 'src/stores/sql/key-sessions.ts', to: 'src/stores/postgres/driver/held-client.ts' },
  { rule: 'cli-uses-stores-by-their-entry', from: 'src/cli/stats.ts', to: 'src/stores/postgres/operator.ts' },
  // Not a store's public index, not its entry either: the CLI finds every store in the registry.
  { rule: 'cli-uses-stores-by-their-entry', from: 'src/cli/sql.ts', to: 'src/stores/postgres/index.ts' },
  { rule: 'cli-uses-stores-by-their-entry', from: 'src/cli/target.ts', to: 'src/stores/sqlite/entry.ts' },
  { rule: 'ops-subscribes', from: 'src/ops/recorder.ts', to: 'src/http/body.ts' },
  { rule: 'events-are-declarations', from: 'src/queue/events.ts', to: 'src/queue/consumer.ts' },
  { rule: 'nothing-imports-the-outside', from: 'src/index.ts', to: 'test/fixtures/outside.ts' },
  // A circle, closed by CLOSING below: depcruise reports it once, at its first import.
  { rule: 'no-circular', from: 'src/data/memo.ts', to: 'src/data/upsert.ts' },
]
/** Imports that complete a planted violation and break no rule of their own. */
const CLOSING: { from: string; to: string }[] = [{ from: 'src/data/upsert.ts', to: 'src/data/memo.ts' }]

describe('the import rules (.dependency-cruiser.cjs)', () => {
  const probe = mkdtempSync(join(tmpdir(), 'idem-architecture-'))
  afterAll(() => rmSync(probe, { recursive: true, force: true }))

  it('hold for the library: no forbidden import, no circle', async () => {
    expect(await violations(root)).toEqual([])
  })

  it('plant a forbidden import for every rule', () => {
    const rules = (createRequire(import.meta.url)(config) as { forbidden: { name: string }[] }).forbidden.map((rule) => rule.name)
    expect([...new Set(PLANTED.map((plant) => plant.rule))].sort()).toEqual([...rules].sort())
  })

  it('each catch the import they forbid, and only that rule fires', async () => {
    const imports = new Map<string, string[]>()
    for (const { from, to } of [...PLANTED, ...CLOSING]) {
      imports.set(from, [...(imports.get(from) ?? []), to])
      imports.set(to, imports.get(to) ?? [])
    }
    for (const [path, targets] of imports) {
      const lines = targets.map((to, i) => `import * as m${i} from '${relative(path, to)}'\n`)
      const uses = targets.map((_, i) => `m${i}`)
      writeFile(join(probe, path), `${lines.join('')}export const value = [${uses.join(', ')}]\n`)
    }
    copyFileSync(join(root, 'tsconfig.json'), join(probe, 'tsconfig.json'))
    const found = (await violations(probe)).map((v) => `${v.rule.name}: ${v.from} → ${v.to}`).sort()
    expect(found).toEqual(PLANTED.map((plant) => `${plant.rule}: ${plant.from} → ${plant.to}`).sort())
  })
})

/** The `.ts` files under `dir` (relative to the repository), tests beside the code included. */
function sourcesUnder(dir: string): { path: string; text: string }[] {
  return readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.ts'))
    .map((name) => ({ path: `${dir}/${name}`, text: readFileSync(join(root, dir, name), 'utf8') }))
}

/** Each line of `files` that matches `pattern`, as `path:line: text`. */
function mentions(files: { path: string; text: string }[], pattern: RegExp): string[] {
  return files.flatMap(({ path, text }) =>
    text.split('\n').flatMap((line, i) => (pattern.test(line) ? [`${path}:${i + 1}: ${line.trim()}`] : [])),
  )
}

/** What a front end adds to the core's `IdemEventTypes`, read from its `events.ts`: the `type`s, and every name the file declares. */
function frontEndEvents(): { types: string[]; names: string[] } {
  const files = readdirSync(join(root, 'src'), { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && entry.name !== 'core')
    .map((entry) => join(root, 'src', entry.name, 'events.ts'))
    .filter((path) => existsSync(path))
    .map((path) => readFileSync(path, 'utf8'))
  const types: string[] = []
  const names: string[] = []
  for (const text of files) {
    const merged = /interface IdemEventTypes \{([^}]*)\}/.exec(text)?.[1] ?? ''
    for (const [, type] of merged.matchAll(/^\s*'?([\w-]+)'?\s*:/gm)) types.push(type!)
    for (const [, name] of text.matchAll(/^export (?:interface|type|const) (\w+)/gm)) names.push(name!)
  }
  return { types, names }
}

describe('the core knows no HTTP and no front end', () => {
  const core = sourcesUnder('src/core')

  it('names no HTTP status code', () => {
    // The 4xx and 5xx codes and the classes (2xx, 5xx); a number inside a list of numbers
    // (`100, 200, 400, 800`, `0…400`) is a count or a delay, not a status.
    const status = /(?<![\d…]|\d,\s?)\b(?:[1-5]xx|4(?:0\d|1\d|2\d|31|51)|5(?:0\d|1[01]))\b(?![\d…]|,\s?\d)/
    expect(mentions(core, status)).toEqual([])
  })

  it('names no header and no media type', () => {
    // Header names as prose writes them (`Retry-After`), the ones idem speaks in any case, and media types.
    const titleCased = /\b[A-Z][a-z]+(?:-[A-Z][a-z]+)+\b/
    const header = /\b(?:idempotency-key|idempotent-replayed|retry-after|content-(?:type|length|encoding)|set-cookie|cache-control)\b/i
    const mediaType = /\b(?:application|text|multipart|image|audio|video|font|model)\/[a-z0-9][\w.+-]*|\bproblem\+json\b/i
    expect(mentions(core, titleCased)).toEqual([])
    expect(mentions(core, header)).toEqual([])
    expect(mentions(core, mediaType)).toEqual([])
  })

  it("names no front end's event, nor what its events.ts declares", () => {
    const { types, names } = frontEndEvents()
    // Each front end declares its events (http, queue, data at least).
    expect(types).toEqual(expect.arrayContaining(['http', 'webhook', 'inbox', 'dispatch', 'dead-letter', 'reconcile']))
    const quoted = types.map((type) => `['"\`]${type}['"\`]`)
    const event = new RegExp(`${quoted.join('|')}|\\b(?:${names.join('|')})\\b`)
    expect(mentions(core, event)).toEqual([])
  })
})

describe('the event stream', () => {
  it("holds each front end's events in IdemEvent, one closed union told apart by type", () => {
    // Checked by the compiler (`npm run typecheck`): every key of IdemEventTypes is the
    // `type` of the event it names, and a switch over the types leaves nothing out.
    const keysAreTypes: { [K in keyof IdemEventTypes]: [IdemEventTypes[K]['type']] extends [K] ? true : false } = {
      call: true,
      store: true,
      lease: true,
      warning: true,
      http: true,
      webhook: true,
      inbox: true,
      dispatch: true,
      'dead-letter': true,
      reconcile: true,
    }
    const typeOf = (event: IdemEvent): string => {
      switch (event.type) {
        case 'call':
        case 'store':
        case 'lease':
        case 'warning':
        case 'http':
        case 'webhook':
        case 'inbox':
        case 'dispatch':
        case 'dead-letter':
        case 'reconcile':
          return event.type
        default: {
          const none: never = event
          return none
        }
      }
    }
    expect(Object.values(keysAreTypes).every(Boolean)).toBe(true)
    expect(typeOf({ type: 'http', outcome: 'replayed', method: 'POST', status: 201 })).toBe('http')
  })
})

describe('one logger hook', () => {
  it("writes to the console only in core/events.ts's warn and the default failure logger (the CLI's own output aside)", () => {
    const library = sourcesUnder('src').filter(({ path }) => !path.startsWith('src/cli/') && !path.endsWith('.test.ts'))
    // Code, not comments: doc examples may show console.log.
    const calls = mentions(library, /^(?!\s*(?:\*|\/\/|\/\*)).*\bconsole\./)
    expect(calls).toEqual([
      expect.stringMatching(/^src\/core\/events\.ts:\d+: else console\.warn\(event\.message\)$/),
      expect.stringMatching(/^src\/core\/logger\.ts:\d+: warn: .*console\.warn\(JSON\.stringify/),
      expect.stringMatching(/^src\/core\/logger\.ts:\d+: error: .*console\.error\(JSON\.stringify/),
    ])
  })
})

function writeFile(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true })
  writeFileSync(path, text)
}

/** The specifier `from` uses to import `to`, as the library writes it (`./x.js`, `../y/z.js`). */
function relative(from: string, to: string): string {
  const up = from.split('/').slice(0, -1)
  const down = to.split('/')
  let common = 0
  while (common < up.length && up[common] === down[common]) common++
  const path = [...up.slice(common).map(() => '..'), ...down.slice(common)].join('/').replace(/[.]ts$/, '.js')
  return path.startsWith('.') ? path : `./${path}`
}
