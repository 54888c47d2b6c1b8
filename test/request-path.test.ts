// The files a fresh request's path crosses are the ones docs/architecture.md lists, and
// the three that decide its answer are among them. tools/request-path.mjs answers one
// fresh request through the Fetch middleware on Postgres (after warm-up) under V8's
// precise coverage and prints the files of dist/ whose code ran; a file that joins or
// leaves the path makes this fail until the page says so.
import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { promisify } from 'node:util'
import { afterAll, describe, expect, it } from 'vitest'
import { testSchema } from './support/postgres.js'

const run = promisify(execFile)
const root = new URL('..', import.meta.url).pathname

const db = await testSchema('request_path')
afterAll(() => db?.drop())

describe.skipIf(db === undefined)("a fresh request's path (Fetch middleware, Postgres store)", () => {
  it('crosses the files docs/architecture.md lists, and its answer is decided in three of them', async () => {
    const { stdout } = await run(process.execPath, ['tools/request-path.mjs', '--json', '--schema', db!.schema], { cwd: root })
    const measured = (JSON.parse(stdout) as string[]).map((file) => `src/${file}`)
    const page = readFileSync(new URL('../docs/architecture.md', import.meta.url), 'utf8')
    const block = /<!-- request-path -->([\s\S]*?)<!-- \/request-path -->/.exec(page)
    expect(block, 'docs/architecture.md marks the list with <!-- request-path -->').not.toBeNull()
    const listed = [...block![1]!.matchAll(/`(src\/[^`]+\.ts)`/g)].map((match) => match[1])
    expect(measured).toEqual([...listed].sort())
    expect(page).toContain(`crosses ${measured.length} files`)
    for (const decides of ['src/http/options.ts', 'src/http/handler.ts', 'src/core/decide.ts']) expect(measured).toContain(decides)
  })
})
