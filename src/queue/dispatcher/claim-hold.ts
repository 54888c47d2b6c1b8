import { LeaseLostError } from '../../core/errors/lease-lost.js'
import type { OutboxTable } from '../../ports/outbox-table.js'

/**
 * Keeps one claim's rows leased while their deliveries run (renewing every `everyMs`),
 * and stops once none runs. Mirrors the leased engine's heartbeat, for a batch of rows:
 *
 * - A renewal that finds a running row no longer held by the claim means another
 *   dispatcher took it over: that delivery's signal fires and the loss is reported,
 *   since the row may now be sent twice at once.
 * - When no renewal has been confirmed for a whole lease (the database is down or
 *   slow), the lease may have run out: the running deliveries' signals fire and that is
 *   reported too. Renewal goes on: if nobody took the rows meanwhile, they stay held.
 *
 * The clock is local and monotonic; "confirmed until" counts from when a renewal (or
 * the claim) was sent, so it never outlasts the database's own expiry.
 */
export class ClaimHold {
  readonly #running = new Map<string, AbortController>()
  readonly #table: OutboxTable<unknown, boolean | Promise<boolean>>
  readonly #claimId: string
  readonly #leaseMs: number
  readonly #report: (error: unknown) => void
  readonly #interval: NodeJS.Timeout
  #expiry: NodeJS.Timeout
  #confirmedUntil: number
  #renewing = false
  #stopped = false

  constructor(table: OutboxTable<unknown, boolean | Promise<boolean>>, claimId: string, leaseMs: number, everyMs: number, claimSentAt: number, report: (error: unknown) => void) {
    this.#table = table
    this.#claimId = claimId
    this.#leaseMs = leaseMs
    this.#report = report
    this.#confirmedUntil = claimSentAt + leaseMs
    this.#expiry = this.#armExpiry()
    this.#interval = setInterval(() => this.#renew(), everyMs)
    // The deliveries keep the process alive if they do I/O; the renewal alone must not.
    this.#interval.unref()
  }

  add(id: string, controller: AbortController): void {
    this.#running.set(id, controller)
  }

  /** The delivery of `id` settled: its outcome write, not a renewal, decides the row now. */
  release(id: string): void {
    this.#running.delete(id)
    if (this.#running.size === 0) this.#stop()
  }

  #stop(): void {
    this.#stopped = true
    clearInterval(this.#interval)
    clearTimeout(this.#expiry)
  }

  #renew(): void {
    if (this.#running.size === 0) this.#stop()
    // One renewal at a time: a slow database must not pile up statements.
    if (this.#stopped || this.#renewing) return
    this.#renewing = true
    const ids = [...this.#running.keys()]
    const sentAt = performance.now()
    this.#table.renew(this.#claimId, ids, this.#leaseMs).then(
      (renewed) => {
        this.#renewing = false
        if (this.#stopped) return
        if (renewed.size > 0) {
          this.#confirmedUntil = Math.max(this.#confirmedUntil, sentAt + this.#leaseMs)
          clearTimeout(this.#expiry)
          this.#expiry = this.#armExpiry()
        }
        for (const id of ids) {
          const controller = this.#running.get(id)
          // Settled meanwhile (its outcome may have been written first), or still held.
          if (controller === undefined || renewed.has(id)) continue
          this.#running.delete(id)
          const lost = new LeaseLostError(`outbox claim ${this.#claimId}: row ${id} was claimed by another dispatcher while its delivery still runs`)
          controller.abort(lost)
          this.#report(lost)
        }
        if (this.#running.size === 0) this.#stop()
      },
      (error: unknown) => {
        // Retried at the next tick; the expiry timer decides when the lease may be gone.
        this.#renewing = false
        this.#report(error)
      },
    )
  }

  #armExpiry(): NodeJS.Timeout {
    const timer = setTimeout(() => {
      if (this.#stopped || this.#running.size === 0) return
      const lost = new LeaseLostError(
        `outbox claim ${this.#claimId}: the lease of row(s) ${[...this.#running.keys()].join(', ')} could not be renewed for ${this.#leaseMs} ms ` +
          'while their delivery still runs; another dispatcher may claim them',
      )
      for (const controller of this.#running.values()) controller.abort(lost)
      this.#report(lost)
    }, Math.max(0, this.#confirmedUntil - performance.now()))
    timer.unref()
    return timer
  }
}
