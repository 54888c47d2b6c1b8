import type { KeyInspection } from '../../ports/operator.js'
import { statusOf } from '../inspection.js'
import { redisKeys, type RedisKeys } from './keys.js'

/** The commands an operator reads with: an ioredis client fits. */
export interface RedisReadingClient {
  /** The hash at `key` (HGETALL). */
  hgetall(key: string): Promise<Record<string, string>>
  /** The fields of the hash at `key` (HKEYS). */
  hkeys(key: string): Promise<string[]>
  /** The time `key` has left, in ms (PTTL). */
  pttl(key: string): Promise<number>
  /** The server's clock (TIME). */
  time(): Promise<[string, string] | (string | number)[]>
}

/**
 * One leased key as the Redis store keeps it, read without changing anything, by the
 * server's clock.
 */
export async function redisInspect(client: RedisReadingClient, prefix: string, scope: string, key: string): Promise<KeyInspection & { keys: RedisKeys }> {
  const keys = redisKeys(prefix, scope, key)
  const [claim, stepNames, ttl, time] = await Promise.all([client.hgetall(keys.claim), client.hkeys(keys.steps), client.pttl(keys.claim), client.time()])
  const now = Number(time[0]) * 1000 + Math.floor(Number(time[1]) / 1000)
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
