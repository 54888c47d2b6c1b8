import type { Command } from 'commander'
import type { KeyInspection } from '../ports/operator.js'
import { printJson, type CommandContext } from './context.js'
import { EXIT } from './io.js'
import { human } from './parse.js'
import { storeError, targetOf, withTargetOptions } from './target.js'

export function registerInspect(program: Command, { io, exit }: CommandContext): void {
  const command = program
    .command('inspect')
    .summary("show one key's state: fingerprint, age, expiry, stored status, lease, steps")
    .description(
      'Shows what the store holds for one key of one scope (the scope is the server-side principal, e.g. the account): ' +
        "the transactional record (fingerprint, age, expiry, stored status) and the leased claim (state, lease, fencing token, steps done). " +
        'Reads only; takes no lock. Exits 1 when the store holds nothing for the key.',
    )
    .argument('<scope>', 'the scope the key belongs to (account, API key)')
    .argument('<key>', 'the Idempotency-Key, as the client sent it (without the sf-string quotes)')
  withTargetOptions(command, 'inspect')
    .option('--json', 'print the records as JSON')
    .addHelpText(
      'after',
      `
Examples:
  $ idem inspect acct_1 order-42 --postgres postgres://app@db.internal:5432/app
  $ idem inspect acct_1 order-42 --redis redis://127.0.0.1:6379 --prefix myapp:idem:
  $ idem inspect acct_1 job-7 --dynamodb idem --region eu-west-1`,
    )
    .action(async (scope: string, key: string, flags: { json?: boolean }, self: Command) => {
      const target = targetOf(self, 'inspect')
      const report: KeyInspection = await target.withOperator({ readonly: true }, (operator) => operator.inspect(scope, key)).catch((error: unknown) => {
        throw storeError(error, target)
      })
      const found = report.record !== undefined || report.lease !== undefined
      if (!found) exit(EXIT.exceeded)
      if (flags.json) return printJson(io, { ...report, found })
      for (const line of describe(report, target.flags)) io.out(line)
    })
}

function describe(report: KeyInspection, where: string): string[] {
  const now = Date.parse(report.now)
  const when = (iso: string | null): string => {
    if (iso === null) return 'unknown'
    const delta = Date.parse(iso) - now
    return `${iso} (${delta >= 0 ? `in ${human(delta)}` : `${human(-delta)} ago`})`
  }
  const lines = [`key ${JSON.stringify(report.key)} in scope ${JSON.stringify(report.scope)} (${where})`]
  if (report.record === undefined && report.lease === undefined) {
    lines.push('  nothing stored: the key was never used here, or it expired and was pruned (an expired key is a new key)')
    return lines
  }
  const r = report.record
  if (r !== undefined) {
    lines.push('  transactional record (idem_keys)')
    lines.push(`    fingerprint   ${r.fingerprint}`)
    lines.push(`    created       ${when(r.createdAt)}`)
    lines.push(`    expires       ${when(r.expiresAt)}${r.expired ? ' — EXPIRED: the next request with this key runs as new' : ''}`)
    lines.push(`    stored        ${r.status === null ? 'a non-HTTP outcome' : `HTTP ${r.status}`}, ${r.outcomeBytes} bytes`)
  }
  const l = report.lease
  if (l !== undefined) {
    lines.push('  leased claim')
    lines.push(`    state         ${l.state}${l.state === 'held' ? (l.leaseLive ? ' — a holder is running' : ' — its lease ran out: the next call takes over') : ''}`)
    lines.push(`    fingerprint   ${l.fingerprint}`)
    lines.push(`    holder        fencing token ${l.token === '' ? '(none asked for yet)' : l.token}${l.leaseUntil === null ? '' : `, lease until ${when(l.leaseUntil)}`}`)
    lines.push(`    expires       ${when(l.expiresAt)}${l.expired ? ' — EXPIRED' : ''}`)
    if (l.status !== null) lines.push(`    stored        HTTP ${l.status}`)
    lines.push(`    steps done    ${l.steps.length === 0 ? 'none' : l.steps.map((s) => (s.savedAt === null ? s.name : `${s.name} (${s.savedAt})`)).join(', ')}`)
  }
  return lines
}
