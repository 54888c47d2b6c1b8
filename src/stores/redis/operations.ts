import type { KeyInspection } from '../../ports/operator.js'
import { statusOf } from '../inspection.js'
import type { RedisAdapter } from './adapter.js'
import { redisKeys, type RedisKeys } from './keys.js'

/**
 * One leased key as the Redis store keeps it, read without changing anything, by the
 * server's clock: a claim of protocol v3 (a string), or of v2 (a hash) while one lives.
 */
export async function redisInspect(redis: RedisAdapter, prefix: string, scope: string, key: string): Promise<KeyInspection & { keys: RedisKeys }> {
  const keys = redisKeys(prefix, scope, key)
  const [claim, names, pttl, fence, time] = await Promise.all([
    redis.send(['GET', keys.claim], keys.claim).then(
      (value) => (value === null ? undefined : v3Fields(String(value))),
      async (error: unknown) => {
        if (!(error instanceof Error && error.message.includes('WRONGTYPE'))) throw error
        return fieldsOf(await redis.send(['HGETALL', keys.claim], keys.claim))
      },
    ),
    redis.send(['HKEYS', keys.steps], keys.steps),
    redis.send(['PTTL', keys.claim], keys.claim),
    redis.send(['GET', keys.fence], keys.fence),
    // The server's clock, from the node holding the key.
    redis.send(['TIME'], keys.claim),
  ])
  const stepNames = listOf(names).map(String)
  const ttl = Number(pttl)
  const [seconds, micros] = listOf(time)
  const now = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000)
  const report: KeyInspection & { keys: RedisKeys } = { scope, key, now: new Date(now).toISOString(), keys }
  if (claim?.state !== undefined) {
    // A 3h claim's lease is its TTL; a completed key's last lease means nothing.
    const until = claim.state !== 'held' ? undefined : (claim.lease_until ?? (claim.form === 'h' ? String(now + ttl) : undefined))
    const leaseUntil = until === undefined ? null : Number(until)
    const [token, holder] = typeof fence === 'string' ? fence.split(' ') : []
    report.lease = {
      state: claim.state as 'held' | 'free' | 'completed',
      fingerprint: claim.fingerprint ?? '',
      token: claim.token ?? (holder !== undefined && holder === claim.claimId ? token! : ''),
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

/** A v3 claim's value (see `scripts.ts`) as the fields of v2's hash, with its form and claimId. */
function v3Fields(value: string): Record<string, string | undefined> {
  const kind = value.slice(0, 3)
  if (kind === '3c ') {
    const space = value.indexOf(' ', 3)
    const end = space + 1 + Number(value.slice(3, space))
    return { state: 'completed', fingerprint: value.slice(space + 1, end), outcome: value.slice(end) }
  }
  const claimId = value.slice(3, 39)
  if (kind === '3h ') return { state: 'held', form: 'h', claimId, fingerprint: value.slice(40) }
  const space = value.indexOf(' ', 40)
  const leaseUntil = value.slice(40, space)
  return { state: leaseUntil === '0' ? 'free' : 'held', form: 's', claimId, lease_until: leaseUntil === '0' ? undefined : leaseUntil, fingerprint: value.slice(space + 1) }
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
