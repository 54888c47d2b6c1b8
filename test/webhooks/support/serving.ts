// A test server on loopback: where it listens and how it stops, for every adapter.
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { serve } from '@hono/node-server'

/** What a test reads of a server: where it listens, and how it stops. */
export interface Running {
  readonly base: string
  close(): Promise<void>
}

export const listening = (server: Server): string => `http://127.0.0.1:${(server.address() as AddressInfo).port}`
export const closing = (server: Server) => () => new Promise<void>((resolve) => server.close(() => resolve()))

/** A Fetch handler served by Node (@hono/node-server). */
export function nodeServe(fetch: (request: Request) => Response | Promise<Response>): Promise<Running> {
  return new Promise((resolve) => {
    const server = serve({ fetch, port: 0, hostname: '127.0.0.1' }, () => resolve({ base: listening(server as Server), close: closing(server as Server) }))
  })
}
