import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, describe, expect, it } from 'vitest'
import { PG_URL, testSchema } from '../support/postgres.js'

const run = promisify(execFile)
const root = new URL('../..', import.meta.url).pathname
const db = await testSchema('idem_prune_scale', 2)

// bench/prune.mjs at a size CI can afford (the million-key run is `npm run bench:prune`):
// the invariants it checks are the point here, never its timings.
describe.skipIf(db === undefined)('bench/prune.mjs (small)', () => {
  afterAll(() => db?.drop())

  it('prunes every expired key with `idem prune` while inserts go on: none fails, no live key goes', async () => {
    const { stdout } = await run(process.execPath, [join(root, 'bench/prune.mjs')], {
      env: { ...process.env, IDEM_BENCH_PG_URL: PG_URL, PRUNE_SCHEMA: db!.schema, PRUNE_KEYS: '30000', PRUNE_LIVE: '2000', PRUNE_BATCH: '1000', PRUNE_BASELINE_SECONDS: '1' },
      timeout: 120_000,
    })
    expect(stdout).toMatch(/^expired keys pruned\s+30,000 of 30,000 \(left: 0\)$/m)
    expect(stdout).toMatch(/^pruner rate \(idem prune, batch 1000\)\s+[\d,]+ keys\/s over [\d.]+ s, \d+ batches$/m)
    expect(stdout).toMatch(/^inserts during the prune\s+\d+ in [\d.]+ s, p50 [\d.]+ ms, p99 [\d.]+ ms$/m)
    expect(stdout).toMatch(/^inserts failed\s+0$/m)
    expect(stdout).toMatch(/^live keys removed\s+0 of 2000 older live keys, 0 of \d+ fresh keys$/m)
    expect(stdout).toContain('prune bench: every insert succeeded throughout, every expired key went, every live key stayed')
    expect(stdout).toMatch(/^RATIO prune\.pg\.insert_p99_during_vs_before [\d.]+$/m)
  })
})
