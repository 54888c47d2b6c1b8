import { connect } from 'node:net'

/** What a CancelRequest needs of a pg client: its backend's key, and where its server listens. */
export interface CancellableClient {
  /** The backend's process id (BackendKeyData), as pg keeps it. */
  readonly processID?: number | null
  /** The backend's secret key (BackendKeyData), as pg keeps it. */
  readonly secretKey?: number | null
  /** The server's host name, or the directory of its Unix socket. */
  readonly host?: string
  readonly port?: number
}

// CancelRequest's code (1234 5678), from the protocol's message formats.
const CANCEL_REQUEST_CODE = 80877102

/**
 * Asks the server to cancel the statement a client's backend is running, as pg's own
 * `cancel` does: the protocol's CancelRequest (the backend's process id and secret key)
 * on a connection of its own, so it takes no pool slot and no privilege, and reaches the
 * right backend through PgBouncer too. A backend that runs nothing ignores it. Resolves
 * when the server has taken it (it closes that connection), after `timeoutMs`, or at once
 * for a client without what it takes (pg-native, a custom stream); never rejects.
 */
export function cancelStatement(client: CancellableClient, timeoutMs: number): Promise<void> {
  const { processID, secretKey, host, port } = client
  if (!Number.isInteger(processID) || !Number.isInteger(secretKey) || typeof port !== 'number') return Promise.resolve()
  return new Promise<void>((resolve) => {
    const socket = typeof host === 'string' && host.startsWith('/') ? connect(`${host}/.s.PGSQL.${port}`) : connect(port, host ?? 'localhost')
    const done = (): void => {
      clearTimeout(timer)
      socket.destroy()
      resolve()
    }
    const timer = setTimeout(done, timeoutMs)
    timer.unref()
    socket.once('connect', () => {
      const request = Buffer.alloc(16)
      request.writeInt32BE(16, 0)
      request.writeInt32BE(CANCEL_REQUEST_CODE, 4)
      request.writeInt32BE(processID!, 8)
      request.writeInt32BE(secretKey!, 12)
      socket.end(request)
    })
    socket.once('close', done)
    socket.once('error', done)
  })
}
