import { randomUUID } from 'node:crypto'
import { createClient, DeadlineExceededError, ProblemError, RetriesExhaustedError } from '../../../src/client/index.js'
import { sleep } from './service.js'

export interface LoadOptions {
  url: string
  intents: number
  clients: number
  /** Runs once the load is under way; resolves when the fault is over. */
  fault: () => Promise<void>
  /** Start the fault once this share of the intents has finished. @default 0.25 */
  faultAt?: number
}

export interface LoadResult {
  intents: Array<{ intent: string; key: string; answer?: { orderId?: number; chargeId?: number } }>
  attempts: number
  replays: number
  /** 503s with Retry-After: what the service owes its clients during an outage. */
  unavailable: number
  conflicts: number
  /** Answers no fault excuses: a 500, a 503 without Retry-After, a non-idem error. */
  unexpected5xx: number
  /** Calls that gave up (out of attempts or past their deadline) and came back with their key. */
  cameBack: number
  /** From the end of the fault to the first intent that succeeded after it. */
  recoveryMs: number | undefined
}

/**
 * Intents from concurrent clients (idem's `createClient`, retrying with their key
 * after `Retry-After`), while `fault` runs. A client that gives up comes back with the
 * same key until the intent succeeds, so every intent ends answered.
 */
export async function loadWithFault({ url, intents: count, clients, fault, faultAt = 0.25 }: LoadOptions): Promise<LoadResult> {
  const result: LoadResult = { intents: [], attempts: 0, replays: 0, unavailable: 0, conflicts: 0, unexpected5xx: 0, cameBack: 0, recoveryMs: undefined }
  for (let i = 0; i < count; i++) result.intents.push({ intent: randomUUID(), key: randomUUID() })
  const client = createClient({
    maxAttempts: 8,
    backoff: { baseMs: 20, maxMs: 500 },
    attemptTimeoutMs: 15_000,
    deadlineMs: 30_000,
    onRetry: (event) => {
      if (event.status === 503) {
        if (event.retryAfter) result.unavailable++
        else result.unexpected5xx++
      }
      if (event.status === 409) result.conflicts++
    },
  })
  let finished = 0
  let faultEnded: number | undefined
  let faultRun: Promise<void> | undefined
  let next = 0
  const startFault = () => {
    faultRun ??= fault().then(() => void (faultEnded = performance.now()))
  }
  async function oneClient(): Promise<void> {
    for (let i = next++; i < count; i = next++) {
      const entry = result.intents[i]!
      const body = JSON.stringify({ intent: entry.intent, amount: (i % 97) + 1 })
      for (;;) {
        try {
          const answer = await client.fetch(`${url}/orders`, { method: 'POST', headers: { 'content-type': 'application/json' }, body }, { key: entry.key })
          result.attempts += answer.attempts
          if (answer.replayed) result.replays++
          entry.answer = (await answer.response.json()) as LoadResult['intents'][number]['answer']
          if (faultEnded !== undefined && result.recoveryMs === undefined) result.recoveryMs = performance.now() - faultEnded
          break
        } catch (error) {
          if (error instanceof ProblemError && error.status >= 500) result.unexpected5xx++
          else if (!(error instanceof RetriesExhaustedError || error instanceof DeadlineExceededError || error instanceof ProblemError)) throw error
          result.cameBack++
          if (result.cameBack > count * 10) throw new Error(`clients keep failing: ${String(error)}`)
          await sleep(200)
        }
      }
      if (++finished >= count * faultAt) startFault()
    }
  }
  await Promise.all(Array.from({ length: clients }, oneClient))
  startFault()
  await faultRun
  return result
}
