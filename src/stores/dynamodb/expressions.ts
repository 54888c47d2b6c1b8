import type { AttributeValue } from '@aws-sdk/client-dynamodb'

/**
 * The `ExpressionAttributeNames` of some expressions: every `#name` in them stands for
 * the attribute `name`. Naming every attribute this way keeps DynamoDB's long list of
 * reserved words (`state`, `token`, `ttl`, …) out of the way, and the names always
 * match the expressions that use them (DynamoDB refuses unused ones).
 */
export function namesOf(...expressions: Array<string | undefined>): Record<string, string> {
  const names: Record<string, string> = {}
  for (const expression of expressions) {
    for (const [placeholder, name] of (expression ?? '').matchAll(/#(\w+)/g)) names[placeholder] = name!
  }
  return names
}

/** The `ExpressionAttributeValues` the expressions use (DynamoDB refuses unused ones too). */
export function valuesOf(values: Record<string, AttributeValue>, ...expressions: Array<string | undefined>): Record<string, AttributeValue> | undefined {
  const used: Record<string, AttributeValue> = {}
  for (const expression of expressions) {
    for (const [placeholder] of (expression ?? '').matchAll(/:\w+/g)) {
      const value = values[placeholder]
      if (value === undefined) throw new Error(`no value for ${placeholder} in ${expression}`)
      used[placeholder] = value
    }
  }
  return Object.keys(used).length === 0 ? undefined : used
}

/** The expression parts of a command: condition, update, key condition, filter, with their names and values. */
export function expression(
  parts: { condition?: string; update?: string; keyCondition?: string; filter?: string },
  values: Record<string, AttributeValue> = {},
): Expressions {
  const all = [parts.condition, parts.update, parts.keyCondition, parts.filter]
  const names = namesOf(...all)
  const out: Expressions = {}
  if (parts.condition !== undefined) out.ConditionExpression = parts.condition
  if (parts.update !== undefined) out.UpdateExpression = parts.update
  if (parts.keyCondition !== undefined) out.KeyConditionExpression = parts.keyCondition
  if (parts.filter !== undefined) out.FilterExpression = parts.filter
  if (Object.keys(names).length > 0) out.ExpressionAttributeNames = names
  const used = valuesOf(values, ...all)
  if (used !== undefined) out.ExpressionAttributeValues = used
  return out
}

/** The expression fields of a DynamoDB command (an `Update` action's `UpdateExpression` is always given where it is needed). */
export interface Expressions {
  ConditionExpression?: string
  UpdateExpression?: string
  KeyConditionExpression?: string
  FilterExpression?: string
  ExpressionAttributeNames?: Record<string, string>
  ExpressionAttributeValues?: Record<string, AttributeValue>
}

/** `expression` for an update, whose `UpdateExpression` the `Update` action requires. */
export function updateExpression(parts: { condition?: string; update: string }, values: Record<string, AttributeValue> = {}): Expressions & { UpdateExpression: string } {
  return { ...expression(parts, values), UpdateExpression: parts.update }
}
