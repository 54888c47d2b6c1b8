/**
 * A Kafka source whose client runs in a child process (test/fixtures/kafka-source-worker.mjs),
 * so that the client can die as a process does: `kill()` SIGKILLs the child, and its
 * connections close with nothing more sent (no commit, no LeaveGroup). The deliveries
 * come over IPC and are settled over IPC, so the inbox, the handler and the database stay
 * in this process, as with a source made here.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import type { Delivery, MessageSource, Subscription } from '../../src/queue/index.js'

/** A source in a child process; `kill()` is the crash. */
export interface BridgedSource extends MessageSource {
  kill(): void
}

/** What the worker sends. */
type FromWorker =
  | { type: 'subscribed' }
  | { type: 'delivery'; n: number; id: string | undefined; data: string; headers: Record<string, string>; deliveryCount: number | undefined; redelivered: boolean | undefined }
  | { type: 'settled'; n: number; error?: string }

/** What the worker is told. */
type ToWorker = { type: 'returned'; n: number } | { type: 'settle'; n: number; how: 'ack' } | { type: 'settle'; n: number; how: 'nack'; delayMs: number } | { type: 'settle'; n: number; how: 'deadLetter'; reason: string } | { type: 'close' }

/** A source run by `worker` with `args` (JSON) in a child process. */
export function bridgedSource(worker: string, args: object): BridgedSource {
  let child: ChildProcess | undefined
  let gone = false
  let stderr = ''
  const pending = new Map<number, { resolve(): void; reject(error: Error): void }>()
  // A message to a worker that was just killed is lost, as it would be to a dead process.
  const tell = (message: ToWorker) => {
    if (!gone && child!.connected) child!.send(message, () => {})
  }
  const settle = (n: number, message: ToWorker) =>
    new Promise<void>((resolve, reject) => {
      if (gone) return reject(new Error("the worker's Kafka client is gone"))
      pending.set(n, { resolve, reject })
      tell(message)
    })

  return {
    name: 'kafka:bridged',
    kill() {
      child?.kill('SIGKILL')
    },
    subscribe(onDelivery) {
      child = spawn(process.execPath, [worker, JSON.stringify(args)], { stdio: ['ignore', 'ignore', 'pipe', 'ipc'] })
      child.stderr!.on('data', (chunk: Buffer) => {
        if (stderr.length < 10_000) stderr += chunk.toString('utf8')
      })
      const exited = new Promise<void>((resolve) => child!.once('exit', () => resolve()))
      return new Promise<Subscription>((resolve, reject) => {
        child!.once('exit', (code, signal) => {
          gone = true
          const error = new Error(`the Kafka worker exited (${signal ?? code}): ${stderr.trim().slice(0, 2_000)}`)
          for (const { reject: fail } of pending.values()) fail(error)
          pending.clear()
          reject(error)
        })
        child!.on('message', (message: FromWorker) => {
          if (message.type === 'subscribed') {
            resolve({
              async close() {
                tell({ type: 'close' })
                await exited
              },
            })
          } else if (message.type === 'settled') {
            const waiting = pending.get(message.n)
            pending.delete(message.n)
            if (message.error === undefined) waiting?.resolve()
            else waiting?.reject(new Error(message.error))
          } else {
            const { n } = message
            const delivery: Delivery = {
              id: message.id,
              data: Buffer.from(message.data, 'base64'),
              headers: message.headers,
              deliveryCount: message.deliveryCount,
              redelivered: message.redelivered,
              ack: () => settle(n, { type: 'settle', n, how: 'ack' }),
              nack: (delayMs) => settle(n, { type: 'settle', n, how: 'nack', delayMs }),
              deadLetter: (reason) => settle(n, { type: 'settle', n, how: 'deadLetter', reason }),
            }
            void onDelivery(delivery)
              .catch(() => {})
              .finally(() => tell({ type: 'returned', n }))
          }
        })
      })
    },
  }
}
