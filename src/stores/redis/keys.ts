import { encode } from './protocol.js'

export { encode, redisKeys, type RedisKeys } from './protocol.js'

/** The Redis keys of one inbox message id of one consumer. */
export interface RedisInboxKeys {
  /** The id: a hash (`state` held or processed, the holder's `token`) expiring with the hold or the retention. */
  id: string
  /** The failure count: a hash (`attempts`, `lastError`, `firstFailedAt`). */
  attempts: string
  /** The dead letter, as JSON text. */
  dead: string
}

/**
 * Names the inbox keys of `(consumer, key)` under `prefix`. Their hash tag is the
 * message key alone, `{<key>}`, so every consumer's record of a message and the keys
 * its handler writes through the transaction (`redisInboxKey`) share one slot, and one
 * script can commit them together on Redis Cluster.
 *
 * @example redisInboxKeys('idem:', 'billing', 'msg-1').id // 'idem:inbox:{msg-1}:id:billing'
 */
export function redisInboxKeys(prefix: string, consumer: string, key: string): RedisInboxKeys {
  const base = `${prefix}inbox:{${encode(key)}}:`
  const who = encode(consumer)
  return { id: `${base}id:${who}`, attempts: `${base}attempts:${who}`, dead: `${base}dead:${who}` }
}

/**
 * A key of your own in the slot of message `key`: `<name>{<key>}`. What an inbox
 * handler writes through `tx.call` must be such keys (`tx.key(name)` is this).
 * @example redisInboxKey('orders:', 'msg-1') // 'orders:{msg-1}'
 */
export function redisInboxKey(name: string, key: string): string {
  if (/[{}]/.test(name)) throw new TypeError(`a key name may not contain "{" or "}" (it would move the key out of the message's slot): ${JSON.stringify(name)}`)
  return `${name}{${encode(key)}}`
}
