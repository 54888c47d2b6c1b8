import { PROBLEM_CONTENT_TYPE } from '../../problem.js'
import { isObject, type Json } from './operations.js'

// How idem's parameter, headers and problem responses join an operation's own.

export function isKeyParameter(parameter: unknown): boolean {
  return isObject(parameter) && parameter.in === 'header' && typeof parameter.name === 'string' && parameter.name.toLowerCase() === 'idempotency-key'
}

export function withHeaders(response: Json, headers: Json, where: string): Json {
  const current = response.headers === undefined ? {} : asObject(response.headers, `${where}: its headers`)
  return { ...response, headers: { ...current, ...headers } }
}

/** The operation's own response for a status idem answers too: both, as one. */
export function mergedResponse(theirs: Json, ours: Json, where: string): Json {
  const description = typeof theirs.description === 'string' && theirs.description !== '' ? theirs.description : undefined
  const ourDescription = ours.description as string
  const merged: Json = {
    ...theirs,
    description: description === undefined ? ourDescription : description.includes(ourDescription) ? description : `${description}\n\n${ourDescription}`,
  }
  const content = theirs.content === undefined ? {} : asObject(theirs.content, `${where}: its content`)
  const ourMedia = (ours.content as Json)[PROBLEM_CONTENT_TYPE] as Json
  const theirMedia = content[PROBLEM_CONTENT_TYPE]
  let media = ourMedia
  if (theirMedia !== undefined) {
    const schema = asObject(theirMedia, `${where}: its ${PROBLEM_CONTENT_TYPE} content`).schema
    const alternatives = isObject(schema) && Array.isArray(schema.anyOf) ? schema.anyOf : []
    if (sameJson(schema, ourMedia.schema) || alternatives.some((s: unknown) => sameJson(s, ourMedia.schema))) media = theirMedia as Json
    else media = { ...(theirMedia as Json), schema: { anyOf: [asObject(schema, `${where}: its ${PROBLEM_CONTENT_TYPE} schema`), ourMedia.schema] } }
  }
  merged.content = { ...content, [PROBLEM_CONTENT_TYPE]: media }
  if (isObject(ours.headers)) {
    const headers = theirs.headers === undefined ? {} : asObject(theirs.headers, `${where}: its headers`)
    // The operation's own answers under this status may not carry Retry-After.
    const retryAfter = headers['Retry-After'] ?? { ...(ours.headers['Retry-After'] as Json), required: false }
    merged.headers = { ...headers, 'Retry-After': retryAfter }
  }
  return merged
}

export function asObject(value: unknown, where: string): Json {
  if (isObject(value)) return value
  throw new TypeError(
    `idem: ${where} is not a plain OpenAPI object (a Zod schema or a class instance?): idem adds its headers and problems to plain objects only; write this part as plain OpenAPI`,
  )
}

export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((item, i) => sameJson(item, b[i]))
  if (!isObject(a) || !isObject(b)) return false
  const keys = Object.keys(a)
  return keys.length === Object.keys(b).length && keys.every((key) => Object.hasOwn(b, key) && sameJson(a[key], b[key]))
}
