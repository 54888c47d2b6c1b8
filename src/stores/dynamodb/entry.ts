import { CliError } from '../../core/errors/cli-error.js'
import { masked, reason } from '../../core/errors/credentials.js'
import { IdemError } from '../../core/errors/idem-error.js'
import type { StoreOperator } from '../../ports/operator.js'
import type { StoreEntry, StoreFlags, StoreTarget } from '../../ports/store-entry.js'
import { httpUrl, loadPeer, shellWord } from '../cli-kit.js'

/** DynamoDB as the `idem` command reaches it: `--dynamodb <table>`, `--endpoint` and `--region`. */
export const entry: StoreEntry = {
  name: 'dynamodb',
  title: 'DynamoDB',
  exports: { subpath: './dynamodb', module: './dist/stores/dynamodb/index.js' },
  peer: '@aws-sdk/client-dynamodb',
  cli: {
    value: '<table>',
    help: "DynamoDB table holding idem's items (credentials and region from the AWS SDK's environment)",
    options: [
      { flags: '--endpoint <url>', help: "DynamoDB endpoint, such as http://127.0.0.1:8000 for DynamoDB Local (default: the SDK's)", parse: httpUrl },
      { flags: '--region <region>', help: "AWS region of the table (default: the SDK's, from AWS_REGION)" },
    ],
    // No migrate: the table is made by dynamodbStore(...).createTable() (docs/dynamodb.md).
    commands: ['prune', 'inspect', 'stats', 'uninstall'],
    target: dynamodbTarget,
  },
}

/** Where the table is: its name, and the SDK settings the flags gave. */
interface Table {
  table: string
  endpoint?: string
  region?: string
}

function dynamodbTarget(table: string, options: StoreFlags): StoreTarget {
  if (!/^[A-Za-z0-9_.-]{3,255}$/.test(table)) throw new CliError(`--dynamodb ${JSON.stringify(table)} is not a DynamoDB table name`, 'pass the table of dynamodbStore({ table }): 3–255 of A-Z a-z 0-9 _ . -')
  const endpoint = typeof options.endpoint === 'string' ? options.endpoint : undefined
  const region = typeof options.region === 'string' ? options.region : undefined
  const where: Table = { table, ...(endpoint === undefined ? {} : { endpoint }), ...(region === undefined ? {} : { region }) }
  return {
    flags: `--dynamodb ${table}${endpoint === undefined ? '' : ` --endpoint ${shellWord(masked(endpoint))}`}${region === undefined ? '' : ` --region ${shellWord(region)}`}`,
    secrets: endpoint === undefined ? [] : [endpoint],
    missing: (cause) => new CliError(`DynamoDB table "${table}" does not exist`, `create it: await dynamodbStore({ client, table: '${table}' }).createTable() (docs/dynamodb.md)`, { cause }),
    withOperator: (_access, work) => withDynamo(where, work),
  }
}

// The SDK, and the store's operator, which imports it, are loaded only when a command runs.
const loadDynamo = () =>
  loadPeer('@aws-sdk/client-dynamodb', 'DynamoDB', async () => ({
    DynamoDBClient: (await import('@aws-sdk/client-dynamodb')).DynamoDBClient,
    dynamodbOperator: (await import('./operator.js')).dynamodbOperator,
  }))

/** Makes a DynamoDB client for the table (no retries: a command should fail at once and say why), runs `work` with the operator, and destroys the client. */
async function withDynamo<T>({ table, endpoint, region }: Table, work: (operator: StoreOperator) => Promise<T>): Promise<T> {
  const { DynamoDBClient, dynamodbOperator } = await loadDynamo()
  const client = new DynamoDBClient({ maxAttempts: 1, ...(endpoint === undefined ? {} : { endpoint }), ...(region === undefined ? {} : { region }) })
  try {
    return await work(dynamodbOperator({ client, table })).catch((error: unknown) => {
      if (error instanceof IdemError || error instanceof CliError) throw error
      // The SDK's own failures before any request: no region, no credentials, no endpoint.
      throw new CliError(`cannot reach DynamoDB table "${table}": ${reason(error, endpoint === undefined ? [] : [endpoint])}`, 'check --endpoint, --region and the AWS credentials in the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION)', { cause: error })
    })
  } finally {
    client.destroy()
  }
}
