import { describe, expect, it } from 'vitest'
import { MAX_DURATION_MS } from '../../core/errors/option-checks.js'
import { bullmqMessageId, retryHorizonMs } from './job.js'

describe('bullmqMessageId', () => {
  const job = (id: string | undefined) => ({ id, queueQualifiedName: 'bull:claims', timestamp: 1_733_000_000_000 })

  it("keeps a producer's jobId (and a job scheduler's repeat:… id) as it is", () => {
    expect(bullmqMessageId(job('order-1001'))).toBe('order-1001')
    expect(bullmqMessageId(job('repeat:nightly:1733011200000'))).toBe('repeat:nightly:1733011200000')
    // Not BullMQ's counter: it never writes a leading zero or a sign.
    expect(bullmqMessageId(job('007'))).toBe('007')
  })

  it("names BullMQ's own counter ids with the queue and the creation time, in a form no custom id can take", () => {
    const id = bullmqMessageId(job('17'))
    expect(id).toBe('bullmq:bull:claims:17@1733000000000')
    // BullMQ refuses a custom id with more than two colons, so no producer can send this one.
    expect(id!.split(':').length).toBeGreaterThan(3)
    expect(bullmqMessageId({ ...job('17'), timestamp: 1_733_000_000_001 })).not.toBe(id)
  })

  it('has none for a job without an id (the inbox dead-letters it unless idOf gives one)', () => {
    expect(bullmqMessageId(job(undefined))).toBeUndefined()
  })
})

describe('retryHorizonMs', () => {
  it('is the sum of the backoffs before each retry', () => {
    expect(retryHorizonMs({ attempts: 4, backoff: { type: 'fixed', delay: 1_000 } })).toBe(3_000)
    expect(retryHorizonMs({ attempts: 4, backoff: 1_000 })).toBe(3_000)
    // 1 s, 2 s, 4 s, as BullMQ's exponential strategy waits before retries 1 to 3.
    expect(retryHorizonMs({ attempts: 4, backoff: { type: 'exponential', delay: 1_000 } })).toBe(7_000)
  })

  it('is 0 without retries or without a backoff (retried at once)', () => {
    expect(retryHorizonMs({})).toBe(0)
    expect(retryHorizonMs({ attempts: 1, backoff: 60_000 })).toBe(0)
    expect(retryHorizonMs({ attempts: 5 })).toBe(0)
  })

  it("is unknown for a custom strategy (only the worker's settings know it) and for a delay that is not a duration", () => {
    expect(retryHorizonMs({ attempts: 3, backoff: { type: 'jittered-linear', delay: 10 } })).toBeUndefined()
    expect(retryHorizonMs({ attempts: 3, backoff: { type: 'fixed', delay: Number.NaN } })).toBeUndefined()
  })

  it('stops at the longest duration the inbox takes', () => {
    expect(retryHorizonMs({ attempts: 60, backoff: { type: 'exponential', delay: 1_000 } })).toBe(MAX_DURATION_MS)
  })
})
