import { EventEmitter } from 'node:events'
import { describe, expect, it } from 'vitest'
import { StoreUnavailableError } from '../../../core/errors/store-unavailable.js'
import { checkOut } from './held-client.js'
import type { PgPool, PgPoolClient } from './types.js'

// A client shaped like pg's: an EventEmitter with query and release. Whether the real
// thing emits 'error' under a held client is shown against Postgres in
// test/postgres/connection-loss.test.ts; this pins down what the holder does with it.
function fakeClient() {
  const client = Object.assign(new EventEmitter(), {
    queries: [] as string[],
    released: [] as unknown[],
    async query(text: string) {
      client.queries.push(text)
      return { rows: [], rowCount: 0, command: 'SELECT' }
    },
    escapeLiteral: (value: string) => `'${value}'`,
    release(destroy?: boolean | Error) {
      client.released.push(destroy)
    },
  })
  return client
}
const poolOf = (client: PgPoolClient): PgPool => ({ connect: async () => client })

describe('checkOut', () => {
  it('listens for the connection dying only while it holds the client', async () => {
    const client = fakeClient()
    const held = await checkOut(poolOf(client), 'public')
    expect(client.listenerCount('error')).toBe(1)
    await held.query('SELECT 1')
    held.release()
    expect(client.listenerCount('error')).toBe(0)
    // A healthy client goes back to the pool.
    expect(client.released).toEqual([undefined])
  })

  it('a death while held does not throw; the next use rejects with StoreUnavailableError without sending, and release destroys the client', async () => {
    const client = fakeClient()
    const held = await checkOut(poolOf(client), 'public')
    const fatal = Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' })
    // With nobody listening, this emit would throw, and in pg it ends the process.
    expect(() => client.emit('error', fatal)).not.toThrow()
    client.emit('error', new Error('Connection terminated unexpectedly'))
    expect(held.lost).toBeInstanceOf(StoreUnavailableError)
    // The first error says why.
    expect(held.lost?.cause).toBe(fatal)
    await expect(held.query('COMMIT')).rejects.toBe(held.lost)
    expect(client.queries).toEqual([])
    held.release()
    expect(client.released).toEqual([held.lost])
    expect(client.listenerCount('error')).toBe(0)
  })

  it('a statement the death interrupted rejects with the lost connection, not with pg\'s own error', async () => {
    const client = fakeClient()
    client.query = async () => {
      client.emit('error', Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }))
      throw new Error('Connection terminated unexpectedly')
    }
    const held = await checkOut(poolOf(client), 'public')
    const failure = await held.query('SELECT 1').catch((error: unknown) => error)
    expect(failure).toBeInstanceOf(StoreUnavailableError)
    expect((failure as Error).message).toContain('ECONNRESET')
  })

  it('an error pg does not name as a connection failure still makes the dead client unavailable', async () => {
    const client = fakeClient()
    const held = await checkOut(poolOf(client), 'public')
    client.emit('error', new Error('Received unexpected commandComplete message from backend.'))
    expect(held.lost).toBeInstanceOf(StoreUnavailableError)
    expect(held.lost?.message).toContain('the connection was lost')
  })

  it('release(error) destroys the client; other errors are left for the caller to classify', async () => {
    const client = fakeClient()
    client.query = async () => {
      throw Object.assign(new Error('duplicate key value'), { code: '23505' })
    }
    const held = await checkOut(poolOf(client), 'public')
    const failure = await held.query('INSERT').catch((error: unknown) => error)
    expect(failure).not.toBeInstanceOf(StoreUnavailableError)
    held.release(failure)
    expect(client.released).toEqual([failure])
    const other = await checkOut(poolOf(client), 'public')
    other.release('not an Error')
    expect(client.released).toEqual([failure, true])
  })

  it('a pool that cannot connect fails with StoreUnavailableError; a wrapper without events is held without a listener', async () => {
    const refused: PgPool = { connect: async () => Promise.reject(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })) }
    await expect(checkOut(refused, 'public')).rejects.toBeInstanceOf(StoreUnavailableError)
    const plain = { query: async () => ({ rows: [], rowCount: 0, command: 'SELECT' }), escapeLiteral: (v: string) => v, release() {} }
    const held = await checkOut(poolOf(plain), 'public')
    await expect(held.query('SELECT 1')).resolves.toMatchObject({ rowCount: 0 })
    expect(() => held.release()).not.toThrow()
  })
})
