import type { Command } from 'commander'
import { HTTP_OUTCOMES } from '../http/events.js'
import type { TableStats } from '../ports/operator.js'
import { printJson, type CommandContext } from './context.js'
import { CliError } from '../core/errors/cli-error.js'
import { masked, reason } from '../core/errors/credentials.js'
import { bytes, duration, grouped, httpUrl, human } from './parse.js'
import { storeError, targetOf, withTargetOptions } from './target.js'

/** The seed's alert levels, shown beside the rates. */
const REPLAY_ALERT = 0.02

interface Requests {
  /** Where the counts came from, and since when they count. */
  source: string
  since: 'the service started'
  byOutcome: Record<string, number>
  /** Requests on protected routes that carried or needed a key (all but `unprotected`). */
  total: number
  replayRate: number | null
  conflictRate: number | null
  badKeyRate: number | null
}

export function registerStats(program: Command, { io }: CommandContext): void {
  const command = program
    .command('stats')
    .summary('counts by state and outcome, replay and conflict rates, table size and growth')
    .description(
      "Counts idem's records: keys by state and, within --window, by stored HTTP status and per day; leases by state; inbox ids; the outbox's backlog; dead letters; " +
        "the key table's size on disk and rows per day. The database keeps no record of replays or conflicts (they write nothing), so their rates come from " +
        "a service's /metrics (--metrics), counted since that service started. It counts whole tables: run it off-peak on large ones.",
    )
  withTargetOptions(command, 'stats')
    .option('--window <duration>', 'how far back the recent counts go', duration, 86_400_000)
    .option('--metrics <url>', "a service's Prometheus /metrics, for replay and conflict rates", httpUrl)
    .option('--json', 'print the counts as JSON')
    .addHelpText(
      'after',
      `
Examples:
  $ idem stats --postgres postgres://app@db.internal:5432/app --window 7d
  $ idem stats --postgres 'host=db.internal port=5432 user=app dbname=app' --json
  $ idem stats --sqlite data/app.db --metrics http://127.0.0.1:3000/metrics --json
  $ idem stats --dynamodb idem --endpoint http://127.0.0.1:8000`,
    )
    .action(async (flags: { window: number; metrics?: string; json?: boolean }, self: Command) => {
      const target = targetOf(self, 'stats')
      if (flags.window <= 0) throw new CliError('--window must be longer than 0', 'pass a window such as 1h, 24h or 7d')
      const tables: TableStats = await target.withOperator({ readonly: true }, async (operator) => {
        if (operator.stats === undefined) throw new CliError(`${operator.backend} keeps no counts idem can read`, 'run idem inspect for one key')
        return operator.stats(flags.window)
      }).catch((error: unknown) => {
        throw storeError(error, target)
      })
      const requests = flags.metrics === undefined ? undefined : await scrape(flags.metrics)
      const report = { target: target.flags, ...tables, ...(requests === undefined ? {} : { requests }) }
      if (flags.json) return printJson(io, report)
      for (const line of describe(report)) io.out(line)
    })
}

async function scrape(url: string): Promise<Requests> {
  let text: string
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(5_000) })
    if (!response.ok) throw new Error(`HTTP ${response.status}`)
    text = await response.text()
  } catch (error) {
    throw new CliError(`cannot read ${masked(url)}: ${reason(error, [url])}`, "check the URL of the service's /metrics and that the service is running", { cause: error })
  }
  const byOutcome: Record<string, number> = Object.fromEntries(HTTP_OUTCOMES.map((outcome) => [outcome, 0]))
  let seen = false
  for (const line of text.split('\n')) {
    const match = /^idem_http_requests_total\{(.*)\} (\S+)$/.exec(line)
    if (!match) continue
    const outcome = /(?:^|,)outcome="([^"]*)"/.exec(match[1]!)?.[1]
    if (outcome === undefined) continue
    seen = true
    byOutcome[outcome] = (byOutcome[outcome] ?? 0) + Number(match[2])
  }
  if (!seen) {
    throw new CliError(`${masked(url)} exports no idem_http_requests_total`, "serve idem's metrics there: prometheusMetrics() from idem/prometheus, and its registry's metrics() as /metrics")
  }
  const total = Object.entries(byOutcome).reduce((sum, [outcome, n]) => (outcome === 'unprotected' ? sum : sum + n), 0)
  const share = (n: number): number | null => (total === 0 ? null : n / total)
  return {
    source: masked(url),
    since: 'the service started',
    byOutcome,
    total,
    replayRate: share(byOutcome.replayed ?? 0),
    conflictRate: share(byOutcome.mismatch ?? 0),
    badKeyRate: share((byOutcome['missing-key'] ?? 0) + (byOutcome['invalid-key'] ?? 0)),
  }
}

function describe(report: TableStats & { target: string; requests?: Requests }): string[] {
  const { keys, leases, inbox, outbox, deadLetters } = report
  const pct = (rate: number | null): string => (rate === null ? 'n/a (no requests yet)' : `${(rate * 100).toPrecision(3)}%`)
  const lines = [`idem stats for ${report.target}, window ${human(report.windowMs)}`]
  // A store that keeps no transactional keys or no outbox (DynamoDB) has no line for them.
  if (keys !== undefined) {
    lines.push(
      `keys        ${grouped(keys.total)} (${grouped(keys.live)} live, ${grouped(keys.expired)} expired awaiting prune); ${bytes(keys.bytes)} on disk`,
      `  in window ${grouped(keys.recent)} new, ${grouped(keys.rowsPerDay)} rows/day; by stored status: ${
        Object.entries(keys.byStatus)
          .map(([status, n]) => `${status} ${grouped(n)}`)
          .join(', ') || 'none'
      }`,
    )
    for (const day of keys.byDay) lines.push(`    ${day.day}  ${grouped(day.rows)}`)
  }
  lines.push(
    `leases      held ${grouped(leases.byState.held ?? 0)}, free ${grouped(leases.byState.free ?? 0)}, completed ${grouped(leases.byState.completed ?? 0)}; ${grouped(leases.expired)} expired; ${bytes(leases.bytes)} on disk`,
    `inbox       ${grouped(inbox.live)} ids kept, ${grouped(inbox.expired)} expired`,
  )
  if (outbox !== undefined) {
    lines.push(`outbox      ${grouped(outbox.pending)} pending${outbox.oldestPendingAgeMs === null ? '' : ` (oldest waiting ${human(outbox.oldestPendingAgeMs)})`}, ${grouped(outbox.delivered)} delivered kept`)
  }
  lines.push(`dead letters ${grouped(deadLetters.total)} (${grouped(deadLetters.recent)} in window)`)
  const r = report.requests
  if (r === undefined) lines.push('requests    replay and conflict rates: pass --metrics <url of /metrics> (the database records no replays)')
  else {
    lines.push(`requests    ${grouped(r.total)} since the service started (${r.source})`)
    lines.push(`  replay rate   ${pct(r.replayRate)} (alert above ${REPLAY_ALERT * 100}%)`)
    lines.push(`  conflict rate ${pct(r.conflictRate)} (422s; alert on any sustained rate)`)
    lines.push(`  bad keys      ${pct(r.badKeyRate)} (400s)`)
    lines.push(`  by outcome    ${Object.entries(r.byOutcome).map(([outcome, n]) => `${outcome} ${grouped(n)}`).join(', ')}`)
  }
  return lines
}
