import type { Command } from 'commander'
import { printJson, type CommandContext } from './context.js'
import type { CliIo } from './io.js'
import { count, duration, grouped, human } from './parse.js'
import { storeError, targetOf, withTargetOptions } from './target.js'

interface Flags {
  batchSize: number
  olderThan?: number
  json?: boolean
}

export interface PruneReport {
  target: string
  deleted: number
  seconds: number
  perSecond: number
  batches: number
}

export function registerPrune(program: Command, { io }: CommandContext): void {
  const command = program
    .command('prune')
    .summary('delete expired keys in bounded batches')
    .description(
      'Deletes expired records (HTTP and engine keys, inbox ids, leases and their steps) in batches of --batch-size, each its own short ' +
        'statement that skips rows a running call holds, so inserts go on meanwhile. A live key is never deleted. ' +
        'On a terminal it shows a progress bar; otherwise it prints one summary line.',
    )
  withTargetOptions(command, 'prune')
    .option('--batch-size <n>', 'rows deleted per statement', count(1), 1_000)
    .option('--older-than <duration>', 'also delete outbox rows delivered longer ago than this (e.g. 14d); they are kept otherwise, so adding the same effect again stays a no-op', duration)
    .option('--json', 'print { deleted, seconds, perSecond, batches } as JSON')
    .addHelpText(
      'after',
      `
Examples:
  $ idem prune --postgres postgres://app@db.internal:5432/app --batch-size 5000
  $ idem prune --sqlite data/app.db --older-than 14d   # cron: 0 * * * *
  $ idem prune --dynamodb idem --batch-size 500`,
    )
    .action(async (flags: Flags, self: Command) => {
      const target = targetOf(self, 'prune')
      const where = target.flags
      const options = { batchSize: flags.batchSize, ...(flags.olderThan === undefined ? {} : { deliveredOutboxOlderThanMs: flags.olderThan }) }
      const report = await target.withOperator({}, async (operator): Promise<PruneReport | string> => {
        const prune = operator.prune?.bind(operator)
        const expiredCount = operator.expiredCount?.bind(operator)
        if (prune === undefined || expiredCount === undefined) return `${operator.backend} expires idem's keys itself (each carries its retention as a TTL): nothing to prune`
        return pruned(where, io, () => expiredCount(), (onBatch) => prune({ ...options, onBatch }))
      }).catch((error: unknown) => {
        throw storeError(error, target)
      })
      if (typeof report === 'string') return flags.json ? printJson(io, { target: where, deleted: 0, note: report }) : io.out(`idem: ${report}`)
      if (flags.json) return printJson(io, report)
      io.out(`idem: pruned ${grouped(report.deleted)} expired records in ${human(report.seconds * 1000)} (${grouped(report.perSecond)}/s, ${report.batches} batches)`)
    })
}

/** Runs the prune, drawing a progress bar while a terminal watches. */
async function pruned(target: string, io: CliIo, expired: () => Promise<number>, run: (onBatch: (deleted: number) => void) => Promise<number>): Promise<PruneReport> {
  const started = performance.now()
  // The count costs a scan, so it is made only for the bar, which needs a total.
  const total = io.progress === undefined ? undefined : await expired()
  let done = 0
  let batches = 0
  let drawn = 0
  const draw = (): void => {
    const elapsed = (performance.now() - started) / 1000
    const rate = elapsed > 0 ? done / elapsed : 0
    const share = total ? Math.min(1, done / total) : 1
    const width = 30
    const filled = Math.round(share * width)
    io.progress!(`pruning [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${Math.floor(share * 100)}% ${grouped(done)}/${grouped(total ?? done)} · ${grouped(rate)}/s`)
  }
  if (io.progress) draw()
  const deleted = await run((n) => {
    done += n
    batches++
    // At most ten redraws a second: a terminal is slower than a small batch.
    if (io.progress && performance.now() - drawn > 100) {
      drawn = performance.now()
      draw()
    }
  })
  if (io.progress) {
    draw()
    io.progress(undefined)
  }
  const seconds = (performance.now() - started) / 1000
  return { target, deleted, seconds: Number(seconds.toFixed(3)), perSecond: Math.round(seconds > 0 ? deleted / seconds : deleted), batches }
}
