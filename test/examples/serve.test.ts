import type { ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { PG_URL, testSchema, type TestSchema } from '../support/postgres.js'
import { startServe } from '../support/serve.js'

const db = await testSchema('idem_serve')

describe.skipIf(db === undefined)('npm run serve on Postgres', () => {
  let child: ChildProcess
  let base: string
  beforeAll(async () => {
    ;({ child, base } = await startServe({ DATABASE_URL: PG_URL, CLAIMS_SCHEMA: (db as TestSchema).schema }))
  })
  afterAll(async () => {
    child?.kill('SIGTERM')
    await db?.drop()
  })

  const post = (path: string, account: string, key: string, body: unknown) =>
    fetch(`${base}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${account}`, 'idempotency-key': `"${key}"`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })

  it('places an order once per key and account, and replays it', async () => {
    const order = { amount: 1500, currency: 'eur', customer: 'alice' }
    const first = await post('/orders', 'acct_a', 'order-1', order)
    expect(first.status).toBe(201)
    const created = (await first.json()) as { id: string; chargeId: string }
    const again = await post('/orders', 'acct_a', 'order-1', { customer: 'alice', currency: 'eur', amount: 1500 })
    expect(again.status).toBe(201)
    expect(again.headers.get('idempotent-replayed')).toBe('true')
    expect(await again.json()).toEqual(created)
    // Another account with the same key is a different intent, and never sees acct_a's order.
    const other = await post('/orders', 'acct_b', 'order-1', order)
    expect(other.headers.get('idempotent-replayed')).toBeNull()
    expect(((await other.json()) as { account: string }).account).toBe('acct_b')
    const ledger = await (await fetch(`${base}/ledger`)).json()
    expect(ledger).toHaveLength(2)
    const read = await fetch(`${base}/orders/${created.id}`, { headers: { authorization: 'Bearer acct_a' } })
    expect(((await read.json()) as { charge_id: string }).charge_id).toBe(created.chargeId)
  })

  it('answers the decided problems', async () => {
    expect((await fetch(`${base}/orders`, { method: 'POST', headers: { authorization: 'Bearer a' }, body: '{}' })).status).toBe(400)
    const mismatch = await post('/orders', 'acct_a', 'order-1', { amount: 1, currency: 'eur', customer: 'alice' })
    expect(mismatch.status).toBe(422)
    expect(mismatch.headers.get('content-type')).toContain('application/problem+json')
  })

  it('works a claim off its queue: chunks once, one summary, one email', async () => {
    const document = Array.from({ length: 58 * 20 }, (_, i) => `w${i}`).join(' ')
    expect((await post('/claims', 'acct_a', 'claim-9', { claimId: 'claim-9', document })).status).toBe(202)
    let state: { chunks: number; emails: number; summaries: number } = { chunks: 0, emails: 0, summaries: 0 }
    for (let i = 0; i < 100 && state.emails === 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      state = (await (await fetch(`${base}/claims/claim-9`)).json()) as typeof state
    }
    expect(state).toMatchObject({ chunks: 58, emails: 1, summaries: 1 })
    const metrics = await (await fetch(`${base}/metrics`)).text()
    expect(metrics).toMatch(/idem_calls_total\{engine="transactional",store="postgres",outcome="fresh"\} \d+/)
    expect(metrics).toContain('idem_http_requests_total{outcome="replayed"} 1')
    expect(metrics).toContain('idem_http_requests_total{outcome="mismatch"} 1')
    expect(metrics).toMatch(/idem_inbox_messages_total\{consumer="claims-intake-worker",status="processed"\} 1/)
    expect((await fetch(`${base}/healthz`)).status).toBe(200)
  })
})

describe('npm run serve with FAULT_DROP_AFTER_COMMIT', () => {
  it('drops the answer after the order committed; the retry with the same key replays it', async () => {
    const { mkdtempSync, rmSync } = await import('node:fs')
    const { tmpdir } = await import('node:os')
    const data = mkdtempSync(join(tmpdir(), 'idem-drop-'))
    const { child, base } = await startServe({ DATABASE_URL: '', CLAIMS_DB: join(data, 'drop.db'), FAULT_DROP_AFTER_COMMIT: '0.999' })
    try {
      const order = () =>
        fetch(`${base}/orders`, {
          method: 'POST',
          headers: { authorization: 'Bearer acct_drop', 'idempotency-key': '"drop-1"', 'content-type': 'application/json' },
          body: JSON.stringify({ amount: 250, currency: 'eur', customer: 'bob' }),
        })
      await expect(order()).rejects.toThrow() // the connection was cut: no answer at all
      const ledger = (await (await fetch(`${base}/ledger`)).json()) as unknown[]
      expect(ledger).toHaveLength(1) // ...yet the charge happened and committed
      await expect(order()).rejects.toThrow() // the retry's answer is dropped too (p = 0.999)
      expect(await (await fetch(`${base}/ledger`)).json()).toHaveLength(1) // and charged nothing more
    } finally {
      child.kill('SIGTERM')
      rmSync(data, { recursive: true, force: true })
    }
  })
})
