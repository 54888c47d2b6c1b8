import type { KeyInspection } from '../../ports/operator.js'
import { statusOf } from '../inspection.js'
import type { RedisAdapter } from './adapter.js'
import { redisKeys, type RedisKeys } from './keys.js'

/**
 * One leased key as the Redis store keeps it, read without changing anything, by the
 * server's clock.
 */
export async function redisInspect(redis: RedisAdapter, prefix: string, scope: string, key: string): Promise<KeyInspection & { keys: RedisKeys }> {
  const keys = redisKeys(prefix, scope, key)
  const [hash, names, pttl, time] = await Promise.all([
    redis.send(['HGETALL', keys.claim], keys.claim),
    redis.send(['HKEYS', keys.steps], keys.steps),
    redis.send(['PTTL', keys.claim], keys.claim),
    // The server's clock, from the node holding the key.
    redis.send(['TIME'], keys.claim),
  ])
  const claim = fieldsOf(hash)
  const stepNames = listOf(names).map(String)
  const ttl = Number(pttl)
  const [seconds, micros] = listOf(time)
  const now = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000)
  const report: KeyInspection & { keys: RedisKeys } = { scope, key, now: new Date(now).toISOString(), keys }
  if (claim.state !== undefined) {
    // A completed key keeps its last lease_until, which means nothing once it is completed.
    const leaseUntil = claim.state !== 'held' || claim.lease_until === undefined ? null : Number(claim.lease_until)
    report.lease = {
      state: claim.state as 'held' | 'free' | 'completed',
      fingerprint: claim.fingerprint ?? '',
      token: claim.token ?? '',
      leaseUntil: leaseUntil === null ? null : new Date(leaseUntil).toISOString(),
      leaseLive: claim.state === 'held' && leaseUntil !== null && leaseUntil > now,
      // Redis drops the key when its retention ends: a key that is there has not expired.
      expiresAt: ttl > 0 ? new Date(now + ttl).toISOString() : null,
      expired: false,
      status: statusOf(claim.outcome),
      // Redis keeps no time per step.
      steps: stepNames.sort().map((name) => ({ name, savedAt: null, token: null })),
    }
  }
  return report
}

function listOf(reply: unknown): unknown[] {
  return Array.isArray(reply) ? reply : []
}

/** A hash as HGETALL's reply has it: a flat list of fields and values (RESP2), or a map (RESP3: an object, or a Map). */
function fieldsOf(reply: unknown): Record<string, string | undefined> {
  if (Array.isArray(reply)) {
    const fields: Record<string, string> = {}
    for (let i = 0; i + 1 < reply.length; i += 2) fields[String(reply[i])] = String(reply[i + 1])
    return fields
  }
  const entries = reply instanceof Map ? [...reply.entries()] : typeof reply === 'object' && reply !== null ? Object.entries(reply) : []
  return Object.fromEntries(entries.map(([field, value]) => [String(field), String(value)]))
}
