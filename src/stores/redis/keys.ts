/** The Redis keys of one `(scope, key)`. */
export interface RedisKeys {
  /** The claim hash: state, fingerprint, token, lease expiry, outcome. */
  claim: string
  /** The steps hash: step name → result. */
  steps: string
}

/**
 * Names the keys of `(scope, key)` under `prefix`. Both carry the same Redis Cluster
 * hash tag, `{scope:key}`, so they live in one slot and one script may touch both.
 * `%`, `{`, `}` and `:` inside scope and key are percent-encoded: a `}` would end the
 * tag early, and encoding `:` keeps ("a:b","c") and ("a","b:c") apart.
 *
 * @example redisKeys('idem:', 'acct_1', 'order-42') // { claim: 'idem:{acct_1:order-42}:claim', steps: 'idem:{acct_1:order-42}:steps' }
 */
export function redisKeys(prefix: string, scope: string, key: string): RedisKeys {
  const tag = prefix + '{' + encode(scope) + ':' + encode(key) + '}'
  return { claim: tag + ':claim', steps: tag + ':steps' }
}

/** Percent-encodes `%`, `{`, `}` and `:`, so a text can sit inside a hash tag and between `:` separators. */
export function encode(text: string): string {
  // Built on every call: most scopes and keys have none of the four, and a scan costs
  // less than a regular expression's replace.
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === 0x25 || c === 0x7b || c === 0x7d || c === 0x3a) return text.replace(/[%{}:]/g, (s) => `%${s.charCodeAt(0).toString(16).toUpperCase()}`)
  }
  return text
}

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
