import { execFileSync, spawnSync } from 'node:child_process'
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Registry } from 'prom-client'
import { parse } from 'yaml'
import { afterAll, describe, expect, it } from 'vitest'
import { createEventStream } from '../../src/core/events.js'
import { METRICS, type LabelValues } from '../../src/ops/catalog.js'
import { prometheusMetrics } from '../../src/ops/prometheus.js'

const root = new URL('../..', import.meta.url).pathname
const rulesPath = join(root, 'ops/prometheus/alerts.yml')
const rulesTestPath = join(root, 'ops/prometheus/alerts.test.yml')
const rulesText = readFileSync(rulesPath, 'utf8')
const rules = parse(rulesText) as { groups: { name: string; rules: { alert: string; expr: string; for?: string; annotations: Record<string, string> }[] }[] }
const alerts = rules.groups.flatMap((group) => group.rules)
const rulesTest = parse(readFileSync(rulesTestPath, 'utf8')) as {
  tests: { name: string; input_series: { series: string }[]; alert_rule_test: { alertname: string; exp_alerts: unknown[] }[] }[]
}
const dashboard = JSON.parse(readFileSync(join(root, 'ops/grafana/idem-dashboard.json'), 'utf8')) as { panels: { title: string; targets: { expr: string }[] }[] }
const operating = readFileSync(join(root, 'docs/operating.md'), 'utf8')

/** What one exporter really emits: every series name, with each histogram's _bucket/_count/_sum, and each metric's label names. */
async function emitted(prefix = 'idem_'): Promise<Map<string, Set<string>>> {
  const registry = new Registry()
  const exporter = prometheusMetrics({ registry, events: createEventStream(), prefix, stores: ['postgres'], consumers: ['c'] })
  const names = new Map<string, Set<string>>()
  for (const metric of await registry.getMetricsAsJSON()) {
    const spec = Object.values(METRICS).find((m) => `${prefix}${m.name}` === metric.name)
    const labels = new Set(Object.keys(spec?.labels ?? {}))
    if (String(metric.type) === 'histogram') {
      for (const suffix of ['_bucket', '_count', '_sum']) names.set(`${metric.name}${suffix}`, suffix === '_bucket' ? new Set([...labels, 'le']) : labels)
    } else names.set(metric.name, labels)
  }
  exporter.stop()
  return names
}

const FUNCTIONS = new Set(['sum', 'max', 'min', 'avg', 'rate', 'increase', 'histogram_quantile', 'by', 'without', 'or', 'and', 'unless', 'time', 'count'])

/** Every selector in a PromQL expression (or a series of a promtool test): its metric name and matchers. */
function selectors(expr: string): { name: string; matchers: { label: string; op: string; value: string }[] }[] {
  const found: { name: string; matchers: { label: string; op: string; value: string }[] }[] = []
  // Label lists of by/without are not selectors.
  const text = expr.replace(/\b(by|without)\s*\([^)]*\)/g, ' ')
  for (const match of text.matchAll(/([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\{([^}]*)\})?\s*(\[)?/g)) {
    const [, name, braces, inner, range] = match
    if (FUNCTIONS.has(name!) || /^\d/.test(name!)) continue
    const after = text.slice(match.index! + match[0].length)
    if (braces === undefined && range === undefined && !name!.startsWith('idem') && after.startsWith('(')) continue
    if (braces === undefined && range === undefined && !name!.startsWith('idem')) continue
    const matchers = [...(inner ?? '').matchAll(/([a-zA-Z_]\w*)\s*(=~|!~|!=|=)\s*"([^"]*)"/g)].map(([, label, op, value]) => ({ label: label!, op: op!, value: value! }))
    found.push({ name: name!, matchers })
  }
  return found
}

/** What in `exprs` names a metric, a label or a label value the exporter does not emit. */
function unknownNames(exprs: string[], names: Map<string, Set<string>>, prefix = 'idem_'): string[] {
  const problems: string[] = []
  for (const expr of exprs) {
    for (const { name, matchers } of selectors(expr)) {
      const labels = names.get(name)
      if (labels === undefined) {
        problems.push(`metric ${name}`)
        continue
      }
      const spec = Object.values(METRICS).find((m) => name.startsWith(`${prefix}${m.name}`))
      for (const { label, op, value } of matchers) {
        if (!labels.has(label)) {
          problems.push(`label ${name}{${label}}`)
          continue
        }
        const values = (spec?.labels as Record<string, LabelValues> | undefined)?.[label]
        if (!Array.isArray(values)) continue
        for (const one of op.endsWith('~') ? value.split('|') : [value]) if (!values.includes(one)) problems.push(`value ${name}{${label}="${one}"}`)
      }
    }
  }
  return problems
}

const ruleExprs = alerts.map((rule) => rule.expr)
const seriesExprs = rulesTest.tests.flatMap((test) => test.input_series.map((input) => input.series))
const dashboardExprs = dashboard.panels.flatMap((panel) => panel.targets.map((target) => target.expr))

describe('the shipped alert rules, their tests and the dashboard', () => {
  it('ship the seed\'s three alerts at its levels, and the store and dead-letter alerts', () => {
    const byName = Object.fromEntries(alerts.map((rule) => [rule.alert, rule]))
    expect(Object.keys(byName).sort()).toEqual(['IdemDeadLetters', 'IdemKeyConflicts', 'IdemReconcileDuplicates', 'IdemReconcileStale', 'IdemReplayRateHigh', 'IdemStoreUnavailable'])
    expect(byName.IdemReplayRateHigh!.expr).toMatch(/> 0\.02\s*$/)
    expect(byName.IdemKeyConflicts!.expr).toMatch(/outcome="mismatch".*> 0$/)
    expect(byName.IdemKeyConflicts!.for).toBe('15m') // "sustained"
    expect(byName.IdemReconcileDuplicates!.expr).toMatch(/idem_reconcile_duplicate_ratio\) > 0\.0001$/)
  })

  it('use only metric names, labels and label values the exporter emits (rules, test series, dashboard)', async () => {
    const names = await emitted()
    expect(new Set(selectors(ruleExprs.join('\n')).map((s) => s.name))).toEqual(
      new Set(['idem_http_requests_total', 'idem_reconcile_duplicate_ratio', 'idem_reconcile_last_run_timestamp_seconds', 'idem_store_errors_total', 'idem_inbox_messages_total', 'idem_dead_letters_total']),
    )
    expect(unknownNames(ruleExprs, names)).toEqual([])
    expect(unknownNames(seriesExprs, names)).toEqual([])
    expect(unknownNames(dashboardExprs, names)).toEqual([])
  })

  it('fail the check when a metric is renamed, on either side', async () => {
    const names = await emitted()
    // Renamed in the rules...
    const renamed = ruleExprs.map((expr) => expr.replaceAll('idem_http_requests_total', 'idem_http_request_total'))
    expect(unknownNames(renamed, names)).toContain('metric idem_http_request_total')
    // ...or an outcome renamed...
    expect(unknownNames(ruleExprs.map((expr) => expr.replace('outcome="replayed"', 'outcome="replay"')), names)).toEqual(['value idem_http_requests_total{outcome="replay"}'])
    // ...or in the exporter (here: every name moved under another prefix).
    const moved = await emitted('idem_v2_')
    const missing = unknownNames(ruleExprs, moved)
    expect(missing).toContain('metric idem_http_requests_total')
    expect(missing).toContain('metric idem_reconcile_duplicate_ratio')
    expect(missing).toContain('metric idem_dead_letters_total')
  })

  it('test every alert firing and quiet', () => {
    for (const { alert } of alerts) {
      const cases = rulesTest.tests.flatMap((test) => test.alert_rule_test.filter((t) => t.alertname === alert))
      expect(cases.some((c) => c.exp_alerts.length > 0), `${alert} fires in some case`).toBe(true)
      expect(cases.some((c) => c.exp_alerts.length === 0), `${alert} stays quiet in some case`).toBe(true)
    }
  })

  it('have a runbook paragraph each in docs/operating.md, which their runbook annotation names', () => {
    for (const rule of alerts) {
      const anchor = rule.alert.toLowerCase()
      expect(rule.annotations.runbook).toBe(`idem docs/operating.md#${anchor}`)
      const section = operating.split(/^### /m).find((s) => s.startsWith(`${rule.alert}\n`))
      expect(section, `docs/operating.md has "### ${rule.alert}"`).toBeDefined()
      expect(section!.length, `${rule.alert}'s runbook says something`).toBeGreaterThan(400)
    }
  })
})

const promtool = spawnSync('promtool', ['--version']).status === 0 ? 'promtool' : undefined
if (promtool === undefined) {
  if (process.env.CI) throw new Error('promtool is required in CI (apt-get install prometheus; .ci/run installs it)')
  console.warn('SKIPPED: promtool is not installed (apt-get install prometheus)')
}

describe.skipIf(promtool === undefined)('promtool', () => {
  const dir = mkdtempSync(join(tmpdir(), 'idem-rules-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('checks the rules and evaluates every alert on the recorded series: all cases pass', () => {
    expect(execFileSync('promtool', ['check', 'rules', rulesPath], { encoding: 'utf8' })).toContain('SUCCESS: 6 rules found')
    expect(execFileSync('promtool', ['test', 'rules', rulesTestPath], { encoding: 'utf8' })).toContain('SUCCESS')
  })

  it("parses every dashboard panel's query (as recording rules)", () => {
    const recording = { groups: [{ name: 'dashboard', rules: dashboard.panels.flatMap((panel, i) => panel.targets.map((target, j) => ({ record: `dashboard:panel_${i}_${j}`, expr: target.expr }))) }] }
    writeFileSync(join(dir, 'dashboard-rules.yml'), JSON.stringify(recording))
    expect(execFileSync('promtool', ['check', 'rules', join(dir, 'dashboard-rules.yml')], { encoding: 'utf8' })).toMatch(/SUCCESS: \d+ rules found/)
  })

  it('fails when the rules name a metric the series (the exporter\'s names) do not have', () => {
    writeFileSync(join(dir, 'alerts.yml'), rulesText.replaceAll('idem_reconcile_duplicate_ratio', 'idem_reconcile_duplicates_ratio'))
    copyFileSync(rulesTestPath, join(dir, 'alerts.test.yml'))
    const run = spawnSync('promtool', ['test', 'rules', join(dir, 'alerts.test.yml')], { encoding: 'utf8' })
    expect(run.status).not.toBe(0)
    expect(run.stdout + run.stderr).toContain('alertname: IdemReconcileDuplicates')
  })
})
