import { createHash } from 'node:crypto'
import type { AttributeValue } from '@aws-sdk/client-dynamodb'

/**
 * The single-table layout (see docs/dynamodb.md): every item has a string partition
 * key `pk` and sort key `sk`. A partition key is a kind and a hash of the item's
 * identity, so any scope, key or consumer fits DynamoDB's 2 KB limit and keys spread
 * evenly over partitions; the readable identity is kept in attributes beside it.
 */
export type Item = Record<string, AttributeValue>

/** The partition key of a leased key: its claim (`sk = '#'`), outcome parts and steps live under it. */
export const leasePk = (scope: string, key: string): string => `lease#${hashOf(scope, key)}`
/** The partition key of an inbox id: the id (`sk = '#'`) and its failure count (`sk = 'attempts'`). */
export const inboxPk = (consumer: string, key: string): string => `inbox#${hashOf(consumer, key)}`
/** The partition key of a `once` mark. */
export const oncePk = (kind: string, subject: string): string => `once#${hashOf(kind, subject)}`
/** The partition key of one source's dead letters (rare writes, read by operators). */
export const deadPk = (source: 'inbox' | 'outbox'): string => `dead#${source}`

/** The key (`pk`, `sk`) of an item read with its key: a query's, a scan's. */
export const keyOf = (item: Item): Item => ({ pk: item.pk!, sk: item.sk! })

export const HEAD_SK = '#'
export const ATTEMPTS_SK = 'attempts'
export const OUTCOME_PART_SK = '#outcome#'
export const STEP_SK = 'step#'
/** A step's head item; its extra parts follow as `<head>#<i>`. Step names can be 1024 characters, more than a sort key holds. */
export const stepSk = (name: string): string => `${STEP_SK}${hashOf(name)}`

// SHA-256 over length-prefixed parts, so ("ab","c") and ("a","bc") never meet.
function hashOf(...parts: string[]): string {
  const hash = createHash('sha256')
  for (const part of parts) hash.update(`${part.length}:`).update(part)
  return hash.digest('base64url')
}

/** DynamoDB's limit on one transaction: its items hold at most 4 MiB together. */
export const MAX_TRANSACTION_BYTES = 4 * 1024 * 1024

/**
 * The largest outcome (and step result) the store holds, `maxOutcomeBytes`: 3.75 MiB
 * of UTF-8. A value longer than one part is written in one transaction with the key's
 * claim item and its other parts, at most `MAX_TRANSACTION_BYTES` in all; the other
 * 256 KiB are for what goes with it: the claim item's identity (a scope of up to 1,024
 * characters, the key, the fingerprint, the numbers) and each part's keys, token and TTL.
 */
export const MAX_OUTCOME_BYTES = MAX_TRANSACTION_BYTES - 256 * 1024

/**
 * An item holds at most 400 KB. A longer text (an outcome of a large response, a large
 * step result) is split into parts of at most this many UTF-16 units (≤ 300 KB of
 * UTF-8), written with the head item in one transaction.
 */
export const PART_CHARS = 100_000

/** Splits `text` into parts of at most `PART_CHARS` units, never inside a surrogate pair. */
export function partsOf(text: string): string[] {
  const parts: string[] = []
  let start = 0
  while (start < text.length || parts.length === 0) {
    let end = Math.min(text.length, start + PART_CHARS)
    const last = text.charCodeAt(end - 1)
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end--
    parts.push(text.slice(start, end))
    start = end
  }
  return parts
}

export const S = (value: string): AttributeValue => ({ S: value })
export const N = (value: number): AttributeValue => ({ N: String(value) })
export const BOOL = (value: boolean): AttributeValue => ({ BOOL: value })

export function str(item: Item | undefined, name: string): string | undefined {
  const value = item?.[name]
  return value !== undefined && 'S' in value ? value.S : undefined
}

export function num(item: Item | undefined, name: string): number | undefined {
  const value = item?.[name]
  return value !== undefined && 'N' in value && value.N !== undefined ? Number(value.N) : undefined
}

export function bool(item: Item | undefined, name: string): boolean {
  const value = item?.[name]
  return value !== undefined && 'BOOL' in value && value.BOOL === true
}

/** DynamoDB's TTL attribute holds epoch seconds; it only collects garbage, the read side checks `expiresAt` (ms). */
export const ttlOf = (expiresAtMs: number): AttributeValue => N(Math.ceil(expiresAtMs / 1000))
