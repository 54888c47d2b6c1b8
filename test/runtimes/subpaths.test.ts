// The subpaths past HTTP executed on Bun and Deno, not only read as import graphs
// (import-graph.test.ts): each case runs a script of test/runtimes/subpaths/ on the
// runtime over dist/ (build first), against the real services, in a key prefix or a
// table of its own, and asserts what the script printed and what it left in the service.
import { GetItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb'
import { describe, expect, it } from 'vitest'
import { idempotencyOpenApi } from '../../src/http/documents/openapi/index.js'
import { expectDescribed, expectValidOpenApi } from '../http/support/openapi.js'
import { REDIS_URL, testRedis } from '../leased/support.js'
import { testDynamo, type TestDynamo } from '../support/dynamodb.js'
import {
  DYNAMO_ORDER,
  effectCounter,
  LAMBDA_ORDER,
  OPENAPI_DOCUMENT,
  OPENAPI_OPTIONS,
  STREAM_MESSAGES,
  streamEffectKey,
  WEBHOOK_ID,
  type DynamoResult,
  type LambdaResult,
  type OpenApiResult,
  type StreamsResult,
  type WebhookResult,
} from './subpaths/results.js'
import { findRuntime, runScript, type Runtime, type RuntimeName } from './support.js'

// A script loads the AWS SDK or ioredis cold, then makes a few round trips.
const SCRIPT_TIMEOUT_MS = 60_000
const CASE_TIMEOUT_MS = SCRIPT_TIMEOUT_MS + 30_000

/** The count a script added to `n` of the item `effectCounter(id)`, read by Node. */
async function counted(client: DynamoDBClient, table: string, id: string): Promise<number> {
  const { Item } = await client.send(new GetItemCommand({ TableName: table, Key: effectCounter(id), ConsistentRead: true }))
  return Number(Item?.n?.N ?? 0)
}

/** Runs `work` with a DynamoDB Local table of its own (dropped after); skips, saying so, when there is none outside CI. */
async function withTable(label: string, skip: () => void, work: (dynamo: TestDynamo) => Promise<void>): Promise<void> {
  const dynamo = await testDynamo(label)
  if (dynamo === undefined) return skip()
  try {
    await work(dynamo)
  } finally {
    await dynamo.drop()
  }
}

function describeSubpaths(name: RuntimeName): void {
  const runtime = findRuntime(name)
  describe.skipIf(runtime === undefined)(`${name}: the queue, webhooks, OpenAPI, Lambda and DynamoDB subpaths, executed`, () => {
    const run = <T>(file: string, config: object) => runScript<T>(runtime as Runtime, file, config, SCRIPT_TIMEOUT_MS)

    it('idem/queue/redis-streams: an inbox consumer on idem/redis takes a message sent twice and another; each runs once, every entry is acked', async (context) => {
      const redis = await testRedis(`runtime-${name}-streams`)
      if (redis === undefined) return context.skip()
      try {
        const result = await run<StreamsResult>('redis-streams.ts', { redisUrl: REDIS_URL, prefix: redis.prefix })
        const statuses = (id: string) => result.entries.filter((entry) => entry.id === id).map((entry) => entry.statuses)
        // The twin entries: one processed, the other settled duplicate; an in-flight before that (the twin still running) may come first.
        // On a loaded machine an entry may also come again after it was processed (XAUTOCLAIM took it over, idle past
        // claimIdleMs, before its ack landed): that delivery is a duplicate. What must hold: one run per id, every entry settled.
        const twins = statuses(STREAM_MESSAGES[0])
        expect(twins).toHaveLength(2)
        expect(twins.flat().filter((status) => status === 'processed')).toHaveLength(1)
        expect(twins.map((each) => each[each.length - 1]).every((last) => last === 'processed' || last === 'duplicate')).toBe(true)
        expect(twins.flat().every((status) => ['processed', 'duplicate', 'in-flight'].includes(status))).toBe(true)
        const other = statuses(STREAM_MESSAGES[2])
        expect(other).toHaveLength(1)
        expect(other[0]![0]).toBe('processed')
        expect(other[0]!.slice(1).every((status) => status === 'duplicate')).toBe(true)
        expect(result.effects).toEqual({ [STREAM_MESSAGES[0]]: 1, [STREAM_MESSAGES[2]]: 1 })
        expect(result.pending).toBe(0)
        // Read back by Node: the counts the handler committed, and the stream's entries all acked.
        for (const id of new Set(STREAM_MESSAGES)) expect(await redis.client.get(streamEffectKey(redis.prefix, id))).toBe('1')
        expect(await redis.client.xlen(`${redis.prefix}orders`)).toBe(3)
        expect(((await redis.client.xpending(`${redis.prefix}orders`, 'intake')) as [number])[0]).toBe(0)
      } finally {
        await redis.drop()
      }
    }, CASE_TIMEOUT_MS)

    it("idem/fetch's webhookReceiver with idem/webhooks' Standard Webhooks verifier, its inbox on idem/dynamodb: the delivery runs once, the redelivery is replayed, a changed body is refused", async (context) => {
      await withTable(`rt_${name}_webhook`, () => context.skip(), async ({ client, table, endpoint }) => {
        const result = await run<WebhookResult>('webhook.ts', { dynamodbUrl: endpoint, table })
        expect(result.first).toEqual({ status: 200, replayed: null, body: JSON.stringify({ received: true, id: WEBHOOK_ID }) })
        expect(result.redelivery).toEqual({ status: 200, replayed: 'true', body: JSON.stringify({ received: true, id: WEBHOOK_ID, duplicate: true }) })
        expect(result.tampered.status).toBe(401)
        expect(JSON.parse(result.tampered.body)).toMatchObject({ code: 'invalid-signature', check: 'no-matching-signature' })
        expect(result.runs).toBe(1)
        expect(await counted(client, table, WEBHOOK_ID)).toBe(1)
      })
    }, CASE_TIMEOUT_MS)

    it('idem/openapi: the transform of an OpenAPI 3.1 document is valid, describes exactly the protected operation, and is what Node makes of it', async () => {
      const { document } = await run<OpenApiResult>('openapi.ts', {})
      await expectValidOpenApi(document)
      expectDescribed(document, ['POST /orders'])
      expect(document).toEqual(idempotencyOpenApi(structuredClone(OPENAPI_DOCUMENT), { ...OPENAPI_OPTIONS, scope: () => 'anonymous' }))
    }, CASE_TIMEOUT_MS)

    it('idem/lambda: makeHttpHandler on the leased engine over idem/dynamodb, given HTTP API (2.0) events: the order once, its retry replayed, another body under the key 422', async (context) => {
      await withTable(`rt_${name}_lambda`, () => context.skip(), async ({ client, table, endpoint }) => {
        const { fresh, replay, mismatch, runs } = await run<LambdaResult>('lambda.ts', { dynamodbUrl: endpoint, table })
        expect(fresh.statusCode).toBe(201)
        expect(fresh.headers).not.toHaveProperty('idempotent-replayed')
        expect(JSON.parse(fresh.body)).toEqual({ orderId: 'o-1', amount: 1500, chargeId: expect.any(String) })
        expect(replay).toEqual({ statusCode: 201, headers: { ...fresh.headers, 'idempotent-replayed': 'true' }, body: fresh.body })
        expect(mismatch.statusCode).toBe(422)
        expect(mismatch.headers['content-type']).toBe('application/problem+json')
        expect(JSON.parse(mismatch.body)).toMatchObject({ code: 'fingerprint-mismatch', status: 422 })
        expect(runs).toBe(1)
        expect(await counted(client, table, LAMBDA_ORDER)).toBe(1)
      })
    }, CASE_TIMEOUT_MS)

    it('idem/dynamodb: the leased engine on DynamoDB Local runs a call once, replays it, and refuses the key with another input', async (context) => {
      await withTable(`rt_${name}_dynamodb`, () => context.skip(), async ({ client, table, endpoint }) => {
        const { fresh, replay, mismatch, runs } = await run<DynamoResult>('dynamodb.ts', { dynamodbUrl: endpoint, table })
        expect(fresh).toEqual({ value: { chargeId: expect.any(String), status: 'charged' }, replayed: false })
        expect(replay).toEqual({ value: fresh.value, replayed: true })
        expect(mismatch).toEqual({ name: 'FingerprintMismatchError', code: 'fingerprint-mismatch' })
        expect(runs).toBe(1)
        expect(await counted(client, table, DYNAMO_ORDER)).toBe(1)
      })
    }, CASE_TIMEOUT_MS)
  })
}

describeSubpaths('bun')
describeSubpaths('deno')
