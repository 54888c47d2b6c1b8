// The context Lambda hands one invocation, its clock real (the deadline counts down from
// when it is made). It imports nothing of idem's, so that the idem/lambda tests, the
// conformance table's Lambda front ends and the scripts Bun and Deno run over dist/
// (test/runtimes/subpaths) share it.
import { randomUUID } from 'node:crypto'
import type { Context } from 'aws-lambda'

export const REGION = 'us-east-1'
export const ACCOUNT = '123456789012'
export const FUNCTION_NAME = 'ship-orders'

/** The context Lambda hands one invocation of `functionName` that may run `timeoutMs` from now. */
export function lambdaContext(timeoutMs: number, functionName: string = FUNCTION_NAME): Context {
  const deadline = Date.now() + timeoutMs
  const requestId = randomUUID()
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:${REGION}:${ACCOUNT}:function:${functionName}`,
    memoryLimitInMB: '512',
    awsRequestId: requestId,
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: `2026/12/02/[$LATEST]${requestId.replaceAll('-', '')}`,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => {},
    fail: () => {},
    succeed: () => {},
  }
}
