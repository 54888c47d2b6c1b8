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

/** The expressions a command can carry: condition, update, key condition, filter. */
export interface ExpressionParts {
  condition?: string
  update?: string
  keyCondition?: string
  filter?: string
}

/** The expression parts of a command: condition, update, key condition, filter, with their names and values. */
export function expression(parts: ExpressionParts, values: Record<string, AttributeValue> = {}): Expressions {
  const out = namedExpressions(parts)
  const used = valuesOf(values, parts.condition, parts.update, parts.keyCondition, parts.filter)
  if (used !== undefined) out.ExpressionAttributeValues = used
  return out
}

// The expressions and their names, without values.
function namedExpressions(parts: ExpressionParts): Expressions {
  const names = namesOf(parts.condition, parts.update, parts.keyCondition, parts.filter)
  const out: Expressions = {}
  if (parts.condition !== undefined) out.ConditionExpression = parts.condition
  if (parts.update !== undefined) out.UpdateExpression = parts.update
  if (parts.keyCondition !== undefined) out.KeyConditionExpression = parts.keyCondition
  if (parts.filter !== undefined) out.FilterExpression = parts.filter
  if (Object.keys(names).length > 0) out.ExpressionAttributeNames = names
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

/**
 * An expression made once, for the commands of a hot path: its names and the values
 * that never change (`constants`) are found when it is made; a call gives only the
 * values that do (`variables`), and no expression is scanned again. Throws when made if
 * the placeholders the expressions use are not exactly the constants and the variables
 * (DynamoDB refuses a missing value and an unused one alike).
 */
export function preparedExpression<V extends string>(
  parts: ExpressionParts,
  constants: Record<string, AttributeValue>,
  variables: readonly V[],
): (values: Readonly<Record<V, AttributeValue>>) => Expressions {
  return bound(namedExpressions(parts), parts, constants, variables)
}

/** `preparedExpression` for an update, whose `UpdateExpression` the `Update` action requires. */
export function preparedUpdate<V extends string>(
  parts: ExpressionParts & { update: string },
  constants: Record<string, AttributeValue>,
  variables: readonly V[],
): (values: Readonly<Record<V, AttributeValue>>) => Expressions & { UpdateExpression: string } {
  return bound({ ...namedExpressions(parts), UpdateExpression: parts.update }, parts, constants, variables)
}

function bound<E extends Expressions, V extends string>(
  named: E,
  parts: ExpressionParts,
  constants: Record<string, AttributeValue>,
  variables: readonly V[],
): (values: Readonly<Record<V, AttributeValue>>) => E {
  const used = new Set<string>()
  for (const expression of [parts.condition, parts.update, parts.keyCondition, parts.filter]) {
    for (const [placeholder] of (expression ?? '').matchAll(/:\w+/g)) used.add(placeholder)
  }
  const given = [...Object.keys(constants), ...variables]
  if (given.length !== used.size || given.some((placeholder) => !used.has(placeholder))) {
    throw new Error(`the expression uses ${[...used].join(', ') || 'no values'}, not ${given.join(', ') || 'none'}`)
  }
  if (used.size === 0) return () => named
  return (values) => ({ ...named, ExpressionAttributeValues: { ...constants, ...values } })
}
