import type { Reporter, TestModule } from 'vitest/node'
import { violates, type ChaosRow } from './support/table.js'

/**
 * Prints the one chaos table once every file has run (only when a chaos scenario ran),
 * and fails the run if any row breaks an invariant, even one whose test did not assert it.
 */
export default class ChaosReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const rows: ChaosRow[] = []
    const failed: string[] = []
    for (const module of testModules) {
      if (!module.moduleId.includes('/test/chaos/')) continue
      for (const test of module.children.allTests()) {
        rows.push(...(test.meta().chaos ?? []))
        if (test.result().state === 'failed') failed.push(test.fullName)
      }
    }
    if (rows.length === 0 && failed.length === 0) return
    rows.sort((a, b) => rank(a) - rank(b))
    process.stdout.write(`\n${table(rows)}\n`)
    const broken = [...rows.filter(violates).map((row) => row.scenario), ...failed.map((name) => `${name} (failed)`)]
    if (broken.length > 0) {
      process.stdout.write(`CHAOS FAILED: ${broken.join('; ')}\n`)
      process.exitCode = 1
    } else {
      process.stdout.write(`CHAOS OK: ${rows.length} scenarios, 0 duplicates, 0 lost, 0 unexpected 5xx, 0 crashes\n`)
    }
  }
}

// The table reads from the inside of a call outwards: crashes, servers, stalls, load, inputs, proofs.
const ORDER = ['crash matrix', 'server', 'stall', 'clocks', 'load', 'fuzz', 'isolation', 'secrets', 'model']
const rank = (row: ChaosRow) => {
  const at = ORDER.findIndex((prefix) => row.scenario.startsWith(prefix))
  return at === -1 ? ORDER.length : at
}

const number = (n: number) => n.toLocaleString('en-US')

export function table(rows: ChaosRow[]): string {
  const header = ['scenario', 'runs', 'duplicates', 'lost', '5xx', 'max recovery', 'notes']
  const body = rows.map((row) => [
    row.scenario,
    `${number(row.runs)}${row.unit === undefined ? '' : ` ${row.unit}`}`,
    number(row.duplicates),
    number(row.lost),
    number(row.unexpected5xx),
    row.maxRecoveryMs === undefined ? '—' : `${(row.maxRecoveryMs / 1000).toFixed(2)} s`,
    [(row.crashes ?? 0) > 0 ? `${row.crashes} crashes` : '', row.notes ?? ''].filter(Boolean).join('; '),
  ])
  const widths = header.map((_, i) => Math.max(header[i]!.length, ...body.map((cells) => cells[i]!.length)))
  const line = (cells: string[]) => `| ${cells.map((cell, i) => (i === 0 || i === 6 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join(' | ')} |`
  return [line(header), `|${widths.map((w, i) => (i === 0 || i === 6 ? `:${'-'.repeat(w + 1)}` : `${'-'.repeat(w + 1)}:`)).join('|')}|`, ...body.map(line)].join('\n')
}
