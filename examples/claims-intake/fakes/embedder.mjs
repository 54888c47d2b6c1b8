// A deterministic fake embedder: the same text always gives the same vector.
import { createHash } from 'node:crypto'

export function embed(text) {
  const digest = createHash('sha256').update(text).digest()
  return Array.from(digest.subarray(0, 8), (byte) => Number((byte / 255).toFixed(4)))
}
