import { Limiter } from '../limiter.js'
import type { KafkaBatchPayload } from './client.js'
import { deliverOnce, type SourceRun } from './record.js'

// Heartbeat answers that mean this member's partitions are being (or have been) taken away.
const MEMBERSHIP_LOST = new Set(['REBALANCE_IN_PROGRESS', 'ILLEGAL_GENERATION', 'UNKNOWN_MEMBER_ID', 'NOT_COORDINATOR_FOR_GROUP', 'FENCED_INSTANCE_ID'])

/**
 * One partition's batch: each record handed over until settled for good (nacks wait and
 * hand it over again), the run of done records committed as it grows, and the batch cut
 * short (starting nothing more, letting the records in hand finish, committing what is
 * done) when the source closes or the group takes the partition away.
 */
export async function runBatch(run: SourceRun, payload: KafkaBatchPayload): Promise<void> {
  const { batch, resolveOffset, commitOffsetsIfNecessary, isRunning, isStale } = payload
  const { topic, partition, messages } = batch
  if (messages.length === 0) return
  const { concurrency, commitIntervalMs, maxNackDelayMs } = run.settings
  const halted = new AbortController()
  run.batches.add(halted)
  const membership: { lost?: unknown } = {}
  const halt = () => {
    if (!halted.signal.aborted && (run.closing || membership.lost !== undefined || !isRunning() || isStale())) halted.abort()
    return halted.signal.aborted
  }
  const beat = membershipBeat(run, payload, membership, halt)
  const commits = new PartitionCommits(
    messages.map((message) => message.offset),
    resolveOffset,
    (last) => commitOffsetsIfNecessary({ topics: [{ topic, partitions: [{ partition, offset: (BigInt(last) + 1n).toString() }] }] }),
  )

  /** Hands record `i` over until it is settled for good, or the batch halts with it unsettled. */
  const handle = async (i: number): Promise<void> => {
    // The slot may have come free after the batch halted.
    if (halt()) return
    for (let count = 1; ; count++) {
      const settled = await deliverOnce(run, topic, partition, messages[i]!, count, halted.signal)
      if (settled === 'done') {
        commits.done(i)
        if (commits.sinceLastMs() >= commitIntervalMs) void commits.commit()
        return
      }
      // Left unsettled: it stays uncommitted and the batch stops at it; the client fetches it again.
      if (settled === 'left') return halted.abort()
      if (halt()) return
      await pause(Math.min(settled.retryInMs, maxNackDelayMs), halted.signal)
      if (halt()) return
    }
  }

  try {
    const running = new Limiter(concurrency)
    for (let i = 0; i < messages.length && !halt(); i++) await running.run(() => handle(i))
    await running.idle()
  } finally {
    clearInterval(beat)
    run.batches.delete(halted)
  }
  await commits.commit()
  // kafkajs rejoins the group when the batch ends with the coordinator's answer.
  if (membership.lost !== undefined) throw membership.lost
}

/**
 * kafkajs heartbeats only between batches; a batch that runs longer than the session
 * (slow handlers, retry waits) must keep the membership alive itself, and this is also
 * where it hears that the group is rebalancing. (librdkafka heartbeats from its own
 * thread and rebalances between batches, which are at most 32 records there.)
 */
function membershipBeat(run: SourceRun, { heartbeat }: KafkaBatchPayload, membership: { lost?: unknown }, halt: () => boolean): ReturnType<typeof setInterval> | undefined {
  if (!run.settings.dialect.heartbeatsInBatch) return undefined
  return setInterval(() => {
    heartbeat().catch((error: unknown) => {
      if (MEMBERSHIP_LOST.has((error as { type?: string })?.type ?? '')) {
        membership.lost ??= error
        halt()
      }
    })
  }, Math.max(50, Math.floor(run.settings.heartbeatMs / 2)))
}

/** A partition's commits: the offset after its longest run of done records, sent one after another so an older offset never lands after a newer one. */
class PartitionCommits {
  private readonly isDone: boolean[]
  private sent = Promise.resolve()
  private lastAt = performance.now()
  private doneUpTo = 0
  private sentUpTo = 0

  constructor(
    private readonly offsets: readonly string[],
    private readonly resolve: (lastDoneOffset: string) => void,
    private readonly send: (lastDoneOffset: string) => Promise<void>,
  ) {
    this.isDone = new Array<boolean>(offsets.length).fill(false)
  }

  done(i: number): void {
    this.isDone[i] = true
  }

  sinceLastMs(): number {
    return performance.now() - this.lastAt
  }

  commit(): Promise<void> {
    while (this.doneUpTo < this.isDone.length && this.isDone[this.doneUpTo]) this.doneUpTo++
    if (this.doneUpTo === this.sentUpTo) return this.sent
    this.sentUpTo = this.doneUpTo
    const last = this.offsets[this.doneUpTo - 1]!
    this.resolve(last)
    this.lastAt = performance.now()
    // Not committed (the group is rebalancing, the coordinator moved): whoever owns the
    // partition next reads these again, and the inbox finds them done.
    this.sent = this.sent.then(() => this.send(last)).catch(() => {})
    return this.sent
  }
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  if (ms <= 0 || signal.aborted) return Promise.resolve()
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms)
    function done() {
      clearTimeout(timer)
      signal.removeEventListener('abort', done)
      resolve()
    }
    signal.addEventListener('abort', done, { once: true })
  })
}

