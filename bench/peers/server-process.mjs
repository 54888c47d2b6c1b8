// A bench:peers server as the parent sees it: server.mjs forked for one framework, variant
// and Redis client, and the questions it answers over IPC.
import { fork } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { PG_URL, POOL_SIZE, PREFIX, REDIS_URL, SCHEMA } from './settings.mjs'

/**
 * Forks server.mjs for `server` (`extra`: more environment); resolves once it listens
 * with `{ port, pid, exited, cpu(), runs(), profile(what, file), stop() }`.
 */
export async function startServer(server, extra = {}) {
  const child = fork(fileURLToPath(new URL('server.mjs', import.meta.url)), [], {
    env: {
      ...process.env,
      PEERS_FRAMEWORK: server.framework,
      PEERS_VARIANT: server.variant,
      ...(server.client !== undefined && { PEERS_CLIENT: server.client }),
      PEERS_SCHEMA: SCHEMA,
      PEERS_PREFIX: PREFIX,
      PEERS_PG_URL: PG_URL,
      PEERS_REDIS_URL: REDIS_URL,
      PEERS_POOL_SIZE: String(POOL_SIZE),
      ...extra,
    },
  })
  const exited = new Promise((resolve) => child.once('exit', resolve))
  const started = await new Promise((resolve, reject) => {
    child.once('message', resolve)
    child.once('exit', (code, signal) => reject(new Error(`${server.slug}: server exited (${code ?? signal}) before listening`)))
  })
  const ask = (question, field) =>
    new Promise((resolve) => {
      const answer = (message) => {
        if (message?.[field] === undefined) return
        child.off('message', answer)
        resolve(message[field])
      }
      child.on('message', answer)
      child.send(question)
    })
  return {
    port: started.port,
    pid: child.pid,
    exited,
    /** The server's CPU time so far, µs. */
    cpu: async () => {
      const { user, system } = await ask('cpu', 'cpu')
      return user + system
    },
    runs: () => ask('runs', 'runs'),
    /** Starts the server's CPU profiler, or stops it and has the profile written to `file`. */
    profile: (what, file) => (what === 'start' ? ask({ profile: 'start' }, 'profiling') : ask({ profile: 'stop', file }, 'profiled')),
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.disconnect()
      await exited
    },
  }
}
