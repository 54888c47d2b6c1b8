import { spawn, type ChildProcess } from 'node:child_process'

/** A librdkafka mock cluster run by kcat: `brokers` are its bootstrap addresses on 127.0.0.1. */
export interface KafkaMock {
  brokers: string[]
  /** Ends kcat (and with it the cluster). */
  stop(): Promise<void>
}

/**
 * Starts librdkafka's mock cluster (3 brokers) through Debian's kcat: kcat consumes a
 * topic of the mock cluster for as long as it runs, and logs the cluster's bootstrap
 * addresses when it comes up. `timeout` bounds its life, so a test run that dies
 * without its afterAll leaves no cluster behind for long. Rejects if kcat is missing or
 * prints no addresses within `startMs` (callers decide whether that skips or fails).
 */
export async function startKafkaMock({ startMs = 10_000, lifeSeconds = 1_800 } = {}): Promise<KafkaMock> {
  const child: ChildProcess = spawn('timeout', [String(lifeSeconds), 'kcat', '-q', '-b', '127.0.0.1', '-X', 'test.mock.num.brokers=3', '-C', '-t', 'idem-mock-warmup'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  let log = ''
  let up = false
  const brokers = await new Promise<string[]>((resolve, reject) => {
    const timer = setTimeout(() => fail(new Error(`kcat printed no mock cluster address within ${startMs} ms: ${log.trim().slice(0, 500)}`)), startMs)
    function fail(error: Error) {
      if (up) return
      clearTimeout(timer)
      child.kill('SIGKILL')
      reject(error)
    }
    child.once('error', (error) => fail(new Error(`kcat could not start (apt-get install kcat): ${error.message}`)))
    child.once('exit', (code) => fail(new Error(`kcat exited (${code}) before the mock cluster came up: ${log.trim().slice(0, 500)}`)))
    child.stderr!.on('data', (chunk: Buffer) => {
      if (log.length < 10_000) log += chunk.toString('utf8')
      // %5|…|MOCK|…| Mock cluster enabled: original bootstrap.servers and security.protocol ignored and replaced with 127.0.0.1:41313,…
      const match = /replaced with (\S+)/.exec(log)
      if (match && !up) {
        up = true
        clearTimeout(timer)
        resolve(match[1]!.split(','))
      }
    })
  })
  return {
    brokers,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
      await exited
    },
  }
}
