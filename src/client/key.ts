import { v7 } from 'uuid'

/** The response header a server sets when it returns a stored outcome instead of running again. */
export const IDEMPOTENT_REPLAYED_HEADER = 'Idempotent-Replayed'

/**
 * A fresh key for one intent: a UUIDv7, whose leading timestamp keeps keys minted
 * together close in a B-tree index on the server.
 * @example mintKey() // → '01932c07-a1b2-7c3d-8e4f-5a6b7c8d9e0f'
 */
export function mintKey(): string {
  return v7()
}

/**
 * Whether a response is a replay of a stored outcome. The value is `true` (as idem and
 * most servers send it) or the sf-boolean `?1`.
 * @example
 * const response = await client.fetch(url, init)
 * if (isReplayed(response.headers)) log.info('served from the stored outcome')
 */
export function isReplayed(headers: Headers): boolean {
  const value = headers.get(IDEMPOTENT_REPLAYED_HEADER)?.trim().toLowerCase()
  return value === 'true' || value === '?1'
}
