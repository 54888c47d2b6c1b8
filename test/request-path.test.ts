// The files a fresh request's path crosses are the ones docs/architecture.md lists, for
// each combination tools/request-path.mjs measures (the Fetch middleware on Postgres,
// Express on Postgres, Hono on Redis): the tool answers one fresh request of each after
// warm-up under V8's precise coverage and prints the files of dist/ whose code ran. A
// file that joins or leaves a path makes this fail until the page says so; a path that
// grows past the count it had when it was first measured fails too (#45 shrinks them
// towards 14: lower a ceiling when a path shrinks, never raise one).
import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { testRedis } from './leased/support.js'
import { testSchema } from './support/postgres.js'

const run = promisify(execFile)
const root = new URL('..', import.meta.url).pathname

/**
 * The most files each path may cross: its count when first measured (2026-12-07), lowered
 * as it shrank (the SQL stores' protocol, #46: the Postgres store's part from 7 files to 3).
 */
const CEILING = { 'fetch-postgres': 26, 'express-postgres': 27, 'hono-redis': 35 } as const
type Combination = keyof typeof CEILING

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

  it.each(Object.keys(CEILING) as Combination[])('%s crosses the files docs/architecture.md lists, no more than its ceiling', (name) => {
    const files = measured[name]
    console.log(`request path ${name}: ${files.length} files (ceiling ${CEILING[name]})`)
    const block = new RegExp(`<!-- request-path: ${name} -->([\\s\\S]*?)<!-- /request-path: ${name} -->`).exec(page)
    expect(block, `docs/architecture.md marks the list with <!-- request-path: ${name} -->`).not.toBeNull()
    const listed = [...block![1]!.matchAll(/`(src\/[^`]+\.ts)`/g)].map((match) => match[1])
    expect(files).toEqual([...listed].sort())
    // The count the page gives is the last one written before the list.
    const counts = [...page.slice(0, block!.index).matchAll(/crosses\s+(\d+)\s+files/g)]
    expect(Number(counts.at(-1)?.[1]), 'the count the page gives before the list').toBe(files.length)
    expect(files.length).toBeLessThanOrEqual(CEILING[name])
  })

  it('decides every answer in the same three files, whatever the front end and store', () => {
    for (const files of Object.values(measured)) for (const decides of ['src/http/options.ts', 'src/http/handler.ts', 'src/core/decide.ts']) expect(files).toContain(decides)
  })
})
