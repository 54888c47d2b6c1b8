// The leased engine on idem/dynamodb, against DynamoDB Local, through the AWS SDK as the
// runtime loads it: a first call runs its step (one charge, counted in the table), the
// same call again replays the stored outcome without running, and the same key with
// another input is refused (FingerprintMismatchError).
import { UpdateItemCommand } from '@aws-sdk/client-dynamodb'
import { createLeasedIdem, type StepContext } from 'idem'
import { dynamodbStore } from 'idem/dynamodb'
import { addOne, localDynamo } from './dynamo-client.js'
import { DYNAMO_ORDER, effectCounter, type DynamoResult } from './results.js'
import { reportResult, required, scriptConfig } from './script.js'

await reportResult(async (): Promise<DynamoResult> => {
  const config = scriptConfig()
  const table = required(config, 'table')
  const client = localDynamo(config)
  const idem = createLeasedIdem({ store: dynamodbStore({ client, table, timeoutMs: 5_000 }) })
  let runs = 0
  const charge = async (ctx: StepContext) => {
    runs++
    const receipt = await ctx.step('charge', async () => {
      await client.send(new UpdateItemCommand(addOne(table, effectCounter(DYNAMO_ORDER))))
      return { chargeId: ctx.derive('charge') }
    })
    return { ...receipt, status: 'charged' }
  }
  const call = { scope: 'acct_1', key: DYNAMO_ORDER, input: { amount: 1500 } }
  const fresh = await idem.run(call, charge)
  const replay = await idem.run(call, charge)
  const mismatch = await idem.run({ ...call, input: { amount: 9900 } }, charge).then(
    () => ({ name: 'none', code: 'none' }),
    (error: { name: string; code?: string }) => ({ name: error.name, code: error.code ?? '' }),
  )
  client.destroy()
  return { fresh: { value: fresh.value, replayed: fresh.replayed }, replay: { value: replay.value, replayed: replay.replayed }, mismatch, runs }
})
