// What the DynamoDB store does beyond the contracts: values past one item's 400 KB,
// an inbox delivery that lost its claim commits nothing, a handler's own condition
// cancels the whole transaction, the front ends (createInbox, createOnce, the leased
// engine) on it, and its options checked at creation.
import { GetItemCommand } from '@aws-sdk/client-dynamodb'
import { randomUUID } from 'node:crypto'
import { afterAll, describe, expect, it } from 'vitest'
import { InvalidOptionError, LeaseLostError, MigrationRequiredError } from '../../src/core/errors/index.js'
import { createLeasedIdem } from '../../src/core/leased/engine.js'
import { createOnce } from '../../src/data/index.js'
import { createInbox } from '../../src/queue/index.js'
import { dynamodbStore, type DynamoTx } from '../../src/stores/dynamodb/index.js'
import { startTcpFaultProxy } from '../../src/testing/index.js'
import { localClient, testDynamo, type TestDynamo } from '../support/dynamodb.js'

const dynamo = await testDynamo('store')

describe.skipIf(dynamo === undefined)('the DynamoDB store (DynamoDB Local)', () => {
  const { store, client, table } = dynamo as TestDynamo
  afterAll(() => dynamo?.drop())

  const counter = (id: string) => ({ pk: { S: `effect#${id}` }, sk: { S: '#' } })
  const bump = (tx: DynamoTx, id: string) =>
    tx.write({ Update: { TableName: table, Key: counter(id), UpdateExpression: 'ADD n :one', ExpressionAttributeValues: { ':one': { N: '1' } } } })
  const count = async (id: string) =>
    Number((await client.send(new GetItemCommand({ TableName: table, Key: counter(id), ConsistentRead: true }))).Item?.n?.N ?? 0)

  it('keeps outcomes and step results larger than one item (400 KB) whole, in parts written with their head', async () => {
    const key = randomUUID()
    // 1.2 million UTF-16 units with astral characters across every part boundary: ~2.4 MB of UTF-8.
    const big = JSON.stringify('🧾'.repeat(300_000) + 'ω'.repeat(600_000))
    const claim = await store.claim('acct', key, 'fp', 10_000, 60_000)
    if (claim.state !== 'acquired') throw new Error(claim.state)
    expect(await claim.lease.saveStep('llm', big)).toBe(true)
    expect(await claim.lease.release()).toBe(true)
    const again = await store.claim('acct', key, 'fp', 10_000, 60_000)
    if (again.state !== 'acquired') throw new Error(again.state)
    expect(again.steps.get('llm') === big).toBe(true)
    expect(await again.lease.complete(big, 60_000)).toBe(true)
    const replay = await store.claim('acct', key, 'other', 10_000, 60_000)
    expect(replay.state === 'completed' && replay.record.outcome === big && replay.record.fingerprint === 'fp').toBe(true)
  })

  it('a delivery cut off from DynamoDB past its claim, and replaced, commits nothing: its commit throws LeaseLostError', async () => {
    // The zombie reaches DynamoDB through a relay the test cuts, as a partition would:
    // its renewals fail, its 150 ms claim lapses, and another delivery takes the id over.
    const proxy = await startTcpFaultProxy({ target: new URL(dynamo!.endpoint).host })
    const zombieClient = localClient(`http://${proxy.host}:${proxy.port}`, 1)
    try {
      const zombieStore = dynamodbStore({ client: zombieClient, table, holdMs: 150 })
      const key = randomUUID()
      const zombie = await zombieStore.inbox.begin({ consumer: 'c', key, waitMs: 0, retentionMs: 60_000 })
      expect(zombie.state).toBe('new')
      bump(zombie.tx, `zombie-${key}`)
      proxy.refuse(true)
      proxy.cut()
      let survivor = await store.inbox.begin({ consumer: 'c', key, waitMs: 0, retentionMs: 60_000 })
      for (let i = 0; survivor.state !== 'new' && i < 100; i++) {
        await new Promise((resolve) => setTimeout(resolve, 20))
        survivor = await store.inbox.begin({ consumer: 'c', key, waitMs: 0, retentionMs: 60_000 })
      }
      expect(survivor.state).toBe('new')
      bump(survivor.tx, `survivor-${key}`)
      await survivor.commit()
      proxy.refuse(false)
      await expect(zombie.commit()).rejects.toBeInstanceOf(LeaseLostError)
      expect(await count(`zombie-${key}`)).toBe(0)
      expect(await count(`survivor-${key}`)).toBe(1)
      expect((await store.inbox.begin({ consumer: 'c', key, waitMs: 0, retentionMs: 60_000 })).state).toBe('processed')
    } finally {
      zombieClient.destroy()
      await proxy.close()
    }
  })

  it("a handler write whose own condition fails cancels the transaction: no effect, no id, and the retry runs again", async () => {
    const key = randomUUID()
    const session = await store.inbox.begin({ consumer: 'c', key, waitMs: 0, retentionMs: 60_000 })
    bump(session.tx, key)
    session.tx.write({ ConditionCheck: { TableName: table, Key: counter(`missing-${key}`), ConditionExpression: 'attribute_exists(pk)' } })
    await expect(session.commit()).rejects.toThrow(/the handler's write 1 of 2 failed \(ConditionalCheckFailed\)/)
    expect(await count(key)).toBe(0)
    const retry = await store.inbox.begin({ consumer: 'c', key, waitMs: 0, retentionMs: 60_000 })
    expect(retry.state).toBe('new')
    await retry.rollback()
  })

  it('createInbox runs a handler once per message id, its writes committed with the id; a failure is counted and retried', async () => {
    const inbox = createInbox<DynamoTx, { order: string }>({ store, consumer: `orders-${randomUUID()}`, maxAttempts: 3 })
    const id = randomUUID()
    let calls = 0
    const handler = async (tx: DynamoTx, message: { body: { order: string } }) => {
      calls++
      if (calls === 1) throw new Error('provider down')
      bump(tx, message.body.order)
    }
    const message = { id, body: { order: id }, deliveryCount: 1 }
    expect((await inbox.consume(message, handler)).status).toBe('failed')
    expect((await inbox.consume({ ...message, deliveryCount: 2 }, handler)).status).toBe('processed')
    expect((await inbox.consume({ ...message, deliveryCount: 3 }, handler)).status).toBe('duplicate')
    expect(calls).toBe(2)
    expect(await count(id)).toBe(1)
  })

  it('createOnce marks in the write set: true once, committed with the transaction, forgotten on rollback', async () => {
    const once = createOnce({ store })
    const subject = randomUUID()
    await expect(store.transaction(async (tx) => {
      expect(await once(tx, 'email', subject)).toBe(true)
      throw new Error('send failed')
    })).rejects.toThrow('send failed')
    expect(await store.transaction((tx) => once(tx, 'email', subject))).toBe(true)
    expect(await store.transaction((tx) => once(tx, 'email', subject))).toBe(false)
    await expect(once({ write() {}, room: 1 } as DynamoTx, 'email', subject)).rejects.toBeInstanceOf(InvalidOptionError)
  })

  it('the leased engine runs on it: one run, a replay, a mismatch', async () => {
    const idem = createLeasedIdem({ store, leaseMs: 5_000 })
    const key = randomUUID()
    let runs = 0
    const first = await idem.run({ scope: 'acct', key, input: { amount: 1 } }, async (ctx) => {
      runs++
      return { charge: await ctx.step('charge', async () => `ch_${key}`) }
    })
    const again = await idem.run({ scope: 'acct', key, input: { amount: 1 } }, async () => 'never')
    expect([runs, first.replayed, again.replayed, again.value]).toEqual([1, false, true, { charge: `ch_${key}` }])
    await expect(idem.run({ scope: 'acct', key, input: { amount: 2 } }, async () => 'never')).rejects.toThrow(/fingerprint|different/i)
  })

  it('a missing table is MigrationRequiredError naming it', async () => {
    const missing = dynamodbStore({ client, table: `missing_${randomUUID().slice(0, 8)}` })
    await expect(missing.claim('acct', 'k', 'fp', 1_000, 1_000)).rejects.toBeInstanceOf(MigrationRequiredError)
    await expect(missing.inbox.recordFailure('c', 'k', 'e')).rejects.toThrow(/createTable/)
  })

  it('refuses bad options at creation, naming the option', () => {
    expect(() => dynamodbStore({ client: {} as never, table })).toThrow(/"client"/)
    expect(() => dynamodbStore({ client, table: 'a' })).toThrow(/"table"/)
    expect(() => dynamodbStore({ client, table, timeoutMs: 0 })).toThrow(/"timeoutMs"/)
    expect(() => dynamodbStore({ client, table, holdMs: 1.5 })).toThrow(/"holdMs"/)
    expect(() => dynamodbStore({ client, table, markWaitMs: -1 })).toThrow(/"markWaitMs"/)
    expect(() => dynamodbStore({ client, table, markWaitMs: 0 })).not.toThrow()
    expect(() => dynamodbStore({ client, table, holdMS: 5 } as never)).toThrow(/"holdMS" is not an option; did you mean "holdMs"/)
    expect(() => dynamodbStore({ client, table, holdMs: 1 })).toThrow(InvalidOptionError)
  })
})
