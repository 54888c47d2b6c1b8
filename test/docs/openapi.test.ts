// docs/openapi.md shows its example verbatim and, in its yaml block, exactly the document
// the example prints: the "after" of its before/after, valid OpenAPI 3.1.
import { parse } from 'yaml'
import { beforeAll, describe, expect, it } from 'vitest'
import { expectValidOpenApi } from '../http/support/openapi.js'
import { compiledExamples, expectPageShows, page, runExample } from './support.js'

// The TypeScript examples compile once, before the tests that run them (a minute on a loaded machine).
beforeAll(async () => {
  await compiledExamples()
}, 300_000)

const PAGE = 'docs/openapi.md'
const FILE = 'examples/guides/openapi.ts'

describe('docs/openapi.md', () => {
  it('shows the example and the document it prints, which is valid and describes POST /orders only', async () => {
    expectPageShows(PAGE, FILE)
    const stdout = await runExample(FILE)
    expect(page(PAGE).includes(`\`\`\`yaml\n${stdout.trim()}\n\`\`\``), `${PAGE} must show what ${FILE} prints`).toBe(true)
    const document = parse(stdout) as Record<string, any>
    await expectValidOpenApi(document)
    expect(document.paths['/orders'].post.parameters.map((p: { name: string }) => p.name)).toEqual(['Idempotency-Key'])
    expect(document.paths['/orders'].post.parameters[0].description).toContain('kept for 2 days')
    expect(Object.keys(document.paths['/orders'].post.responses)).toEqual(['201', '400', '409', '413', '422', '503'])
    expect(document.paths['/orders/{id}'].get.parameters.map((p: { name: string }) => p.name)).toEqual(['id'])
  })
})
