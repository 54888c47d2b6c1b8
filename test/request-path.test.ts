// The files a fresh request's path crosses are the ones docs/architecture.md lists, for
// each combination tools/request-path.mjs measures (the Fetch middleware on Postgres,
// Express on Postgres, Hono on Redis): the tool answers one fresh request of each after
// warm-up under V8's precise coverage and prints the files of dist/ whose code ran. A
// file that joins or leaves a path makes this fail until the page says so
// (`node tools/request-path.mjs --docs` writes it).
//
// #45 sets 14 files as the target of each path, and each is held to it whole. The part
// outside src/stores/ is also held to what it came to (CEILING: lower it when a path
// shrinks, never raise it); the stores came to the share #45 gave them (the Postgres
// store 3 files, the Redis store 2: its protocol and its caller).
import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { testRedis } from './leased/support.js'
import { testSchema } from './support/postgres.js'

const run = promisify(execFile)
const root = new URL('..', import.meta.url).pathname

/** The most files each path may cross outside src/stores/: what #45 brought them to. */
const CEILING = { 'fetch-postgres': 10, 'express-postgres': 11, 'hono-redis': 11 } as const
/** The most files a fresh request's path may cross (#45). */
const TARGET = 14
type Combination = keyof typeof CEILING

/** Where each path's answer is decided, besides the adapter and the store's session: the middleware and the engine. */
const DECIDES: Record<Combination, readonly string[]> = {
  'fetch-postgres': ['src/http/handler.ts', 'src/core/engine.ts'],
  'express-postgres': ['src/http/handler.ts', 'src/core/engine.ts'],
  'hono-redis': ['src/http/handler.ts', 'src/core/leased/runner.ts'],
}

const db = await testSchema('request_path')
const redis = await testRedis('request-path')
afterAll(async () => {
  await db?.drop()
  await redis?.drop()
})

describe.skipIf(db === undefined || redis === undefined)("a fresh request's path", () => {
  let measured: Record<Combination, string[]>
  beforeAll(async () => {
    const { stdout } = await run(process.execPath, ['tools/request-path.mjs', '--json', '--schema', db!.schema, '--prefix', redis!.prefix], { cwd: root })
    measured = JSON.parse(stdout) as Record<Combination, string[]>
  }, 60_000)
  const page = readFileSync(new URL('../docs/architecture.md', import.meta.url), 'utf8')

  it.each(Object.keys(CEILING) as Combination[])('%s crosses the files docs/architecture.md lists, within its ceiling and the target', (name) => {
    const files = measured[name]
    const outside = files.filter((file) => !file.startsWith('src/stores/'))
    console.log(
      `request path ${name}: ${files.length} files, ${outside.length} outside src/stores/ (ceiling ${CEILING[name]}), ` +
        `${files.length - outside.length} in the store (target ${TARGET} in all)`,
    )
    const block = new RegExp(`<!-- request-path: ${name} -->([\\s\\S]*?)<!-- /request-path: ${name} -->`).exec(page)
    expect(block, `docs/architecture.md marks the list with <!-- request-path: ${name} -->`).not.toBeNull()
    const listed = [...block![1]!.matchAll(/`(src\/[^`]+\.ts)`/g)].map((match) => match[1])
    expect(files).toEqual([...listed].sort())
    // The counts the page gives are the last ones written before the list.
    const counts = [...page.slice(0, block!.index).matchAll(/crosses\s+(\d+)\s+files,\s+(\d+)\s+of\s+them\s+outside/g)].at(-1)
    expect(counts?.slice(1).map(Number), 'the counts the page gives before the list').toEqual([files.length, outside.length])
    expect(outside.length).toBeLessThanOrEqual(CEILING[name])
    expect(files.length).toBeLessThanOrEqual(TARGET)
  })

  it.each(Object.keys(CEILING) as Combination[])('%s decides its answer in the middleware and the engine (and the store’s session)', (name) => {
    expect(measured[name]).toEqual(expect.arrayContaining([...DECIDES[name]]))
  })
})
