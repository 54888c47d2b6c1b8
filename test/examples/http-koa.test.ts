// examples/http-koa.ts, which docs/http.md shows whole with what it prints: it runs as
// shown, on Koa 3 and on Koa 2 (through the loader that resolves `koa` to the `koa2`
// install), and prints the same lines on both.
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { beforeAll, describe, expect, it } from 'vitest'
import { compiledExamples, expectPageShows, expectPageShowsOutput, root, runExample } from '../docs/support.js'

// The TypeScript examples compile once, before the tests that run them (a minute on a loaded machine).
beforeAll(async () => {
  await compiledExamples()
}, 300_000)

const PAGE = 'docs/http.md'
const EXAMPLE = 'examples/http-koa.ts'
const OLDER_MAJORS = ['--import', join(root, 'test/support/older-majors-loader.mjs')]

describe(`${EXAMPLE}, shown in ${PAGE}`, () => {
  for (const [koa, loader] of [
    ['Koa 3', []],
    ['Koa 2', OLDER_MAJORS],
  ] as const) {
    it(`${koa}: fresh, replayed, 422, fresh, two rows, as the page shows`, async () => {
      expectPageShows(PAGE, EXAMPLE)
      const stdout = await runExample(EXAMPLE, loader)
      expect(stdout.trim().split('\n')).toEqual([
        '201 - {"orderId":1,"amount":1500}',
        '201 true {"orderId":1,"amount":1500}',
        expect.stringMatching(/^422 - \{"type":"urn:idem:problem#fingerprint-mismatch".*"code":"fingerprint-mismatch"\}$/),
        '201 - {"orderId":2,"amount":700}',
        'orders in the table: 2',
      ])
      expectPageShowsOutput(PAGE, stdout)
    })
  }

  it('the loader resolves `koa` to Koa 2', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [...OLDER_MAJORS, '--input-type=module', '-e', "console.log(import.meta.resolve('koa'))"], { cwd: root })
    expect(stdout.trim()).toMatch(/\/node_modules\/koa2\/dist\/koa\.mjs$/)
  })
})
