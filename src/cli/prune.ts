import type { Command } from 'commander'
import { leasedPostgresStore } from '../stores/postgres/leased.js'
import { postgresExpiredCount } from '../stores/postgres/operations.js'
import { postgresStore } from '../stores/postgres/store.js'
import { leasedSqliteStore } from '../stores/sqlite/leased.js'
import { sqliteExpiredCount } from '../stores/sqlite/operations.js'
import { sqliteStore } from '../stores/sqlite/store.js'
import { printJson, type CommandContext } from './context.js'
import type { CliIo } from './io.js'
import { count, duration, grouped, human } from './parse.js'
import { keyLayoutOf, storeError, targetFlags, targetOf, withKeyLayoutOption, withPostgres, withSqlite, withTargetOptions, type KeyLayout } from './target.js'

interface Flags {
  postgres?: string
  sqlite?: string
  redis?: string
  schema?: string
  batchSize: number
  olderThan?: number
  keyLayout?: KeyLayout
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
  withKeyLayoutOption(withTargetOptions(command, ['postgres', 'sqlite', 'redis']))
    .option('--batch-size <n>', 'rows deleted per statement', count(1), 1_000)
    .option('--older-than <duration>', 'also delete outbox rows delivered longer ago than this (e.g. 14d); they are kept otherwise, so adding the same effect again stays a no-op', duration)
    .option('--json', 'print { deleted, seconds, perSecond, batches } as JSON')
    .addHelpText(
      'after',
      `
Examples:
  $ idem prune --postgres postgres://app@db.internal:5432/app --batch-size 5000
  $ idem prune --sqlite data/app.db --older-than 14d   # cron: 0 * * * *`,
    )
    .action(async (flags: Flags) => {
      const target = targetOf(flags, ['postgres', 'sqlite', 'redis'])
      const layout = keyLayoutOf(flags, target)
      if (target.kind === 'redis') {
        const note = "Redis expires idem's keys itself (each carries its retention as a TTL): nothing to prune"
        return flags.json ? printJson(io, { target: targetFlags(target), deleted: 0, note }) : io.out(`idem: ${note}`)
      }
      const where = targetFlags(target)
      const options = { batchSize: flags.batchSize, ...(flags.olderThan === undefined ? {} : { deliveredOutboxOlderThanMs: flags.olderThan }) }
      const report = await (target.kind === 'postgres'
        ? withPostgres(target, async (pool) => {
            const keys = postgresStore({ pool, schema: target.schema, ...layout })
            const leases = leasedPostgresStore({ pool, schema: target.schema })
            return pruned(where, io, () => postgresExpiredCount(pool, target.schema), async (onBatch) => {
              return (await keys.prune({ ...options, onBatch })) + (await leases.prune({ batchSize: flags.batchSize, onBatch }))
            })
          })
        : withSqlite(target, {}, async (db) => {
            const keys = sqliteStore({ db })
            return pruned(where, io, async () => sqliteExpiredCount(db), async (onBatch) => {
              const deleted = await keys.prune({ ...options, onBatch })
              // Created only now: its statements need the leased tables, which older schemas lack.
              return deleted + (await leasedSqliteStore({ db }).prune({ batchSize: flags.batchSize, onBatch }))
            })
          })
      ).catch((error: unknown) => {
        throw storeError(error, target)
      })
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
