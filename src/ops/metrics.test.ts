import { Registry } from 'prom-client'
import { describe, expect, it } from 'vitest'
import { createIdem } from '../core/engine.js'
import { memoryStore } from '../stores/memory/index.js'
import { prometheusOutcomes } from './metrics.js'

describe('prometheusOutcomes', () => {
  it('counts every engine outcome by kind', async () => {
    const registry = new Registry()
    const { onOutcome } = prometheusOutcomes({ registry })
    const idem = createIdem({ store: memoryStore(), onOutcome })
    await idem.run({ scope: 's', key: 'a', input: 1 }, () => 1)
    await idem.run({ scope: 's', key: 'a', input: 1 }, () => 1)
    await idem.run({ scope: 's', key: 'a', input: 1 }, () => 1)
    await expect(idem.run({ scope: 's', key: 'a', input: 2 }, () => 1)).rejects.toThrow()
    const text = await registry.metrics()
    expect(text).toContain('idem_outcomes_total{kind="fresh",store="memory"} 1')
    expect(text).toContain('idem_outcomes_total{kind="replayed",store="memory"} 2')
    expect(text).toContain('idem_outcomes_total{kind="mismatch",store="memory"} 1')
    expect(text).toMatch(/idem_call_duration_seconds_count\{kind="replayed",store="memory"\} 2/)
  })
})
