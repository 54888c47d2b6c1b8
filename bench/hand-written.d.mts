// Types of bench/hand-written.mjs, for the test that checks it (test/bench/hand-written.test.ts).
import type pg from 'pg'

export interface HandWrittenAnswer {
  status: number
  body: string
  replayed?: boolean
}

export function handWrittenTable(schema: string): string
export function fingerprintOf(method: string, path: string, body: string | undefined): string
export function handWrittenKeys(options: { pool: pg.Pool; schema: string }): {
  handle(request: { scope: string; key: string; fingerprint: string }, route: (client: pg.PoolClient) => Promise<HandWrittenAnswer>): Promise<HandWrittenAnswer>
}
