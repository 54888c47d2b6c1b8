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
  const tag = `{${encode(scope)}:${encode(key)}}`
  return { claim: `${prefix}${tag}:claim`, steps: `${prefix}${tag}:steps` }
}

function encode(text: string): string {
  return text.replace(/[%{}:]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
}
