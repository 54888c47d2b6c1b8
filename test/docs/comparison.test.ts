// The comparison page quotes one bench:peers run: every throughput and CPU figure on it
// must be in that run's saved output, so the page cannot drift from what was measured.
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'

const page = readFileSync('docs/comparison.md', 'utf8')
// Named, not linked: the file is in the repository, not in the package the page ships in.
const linked = /the repository's `(bench\/results\/peers-(\d{4}-\d{2}-\d{2})\.txt)`/.exec(page)

describe('docs/comparison.md', () => {
  it('names the saved output of the run it quotes, and is dated as that run', () => {
    expect(linked).not.toBeNull()
    expect(page).toContain(`- **When and where**: ${linked![2]!},`)
  })

  it('quotes only figures that run printed: requests per second, ratios and CPU per request', () => {
    const run = readFileSync(linked![1]!, 'utf8')
    const rates = [...page.matchAll(/\b(\d{1,2}),(\d{3})\b/g)].map((m) => m[1]! + m[2]!)
    const cpu = [...page.matchAll(/\| (\d{3}) µs \|/g)].map((m) => m[1]!)
    const ratios = [...page.matchAll(/\| \**(\d\.\d{2})\** \|/g)].map((m) => m[1]!)
    expect(rates.length).toBeGreaterThan(20)
    expect(cpu.length).toBeGreaterThan(5)
    expect(ratios.length).toBeGreaterThan(10)
    for (const rate of rates) expect(run, `${rate} req/s`).toMatch(new RegExp(`\\b${rate}\\b`))
    for (const micros of cpu) expect(run, `${micros} µs`).toMatch(new RegExp(`\\b${micros}\\b`))
    for (const value of ratios) expect(run, `${value}×`).toContain(` ${value} `)
  })
})
