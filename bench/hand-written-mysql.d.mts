// Types of bench/hand-written-mysql.mjs, for the test that checks it (test/bench/hand-written-mysql.test.ts).
import type { Pool, PoolConnection } from 'mysql2/promise'
import type { HandWrittenAnswer } from './hand-written.mjs'

export type { HandWrittenAnswer }
export function fingerprintOf(method: string, path: string, body: string | undefined): string
export function handWrittenMysqlTable(): string
export function handWrittenMysqlKeys(options: { pool: Pool }): {
  handle(request: { scope: string; key: string; fingerprint: string }, route: (connection: PoolConnection) => Promise<HandWrittenAnswer>): Promise<HandWrittenAnswer>
}
