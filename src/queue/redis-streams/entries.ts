/** A stream entry as a reply carries it: its id, and its fields and values (null: deleted while pending). */
export type Entry = [id: string, fields: string[] | null]

/**
 * The entries of an XREADGROUP reply, whichever protocol the client speaks: RESP2
 * answers `[[stream, entries]]`; RESP3 (ioredis 6's default) answers a map, which
 * arrives as `[stream, entries, …]` or as a Map or object.
 * @example
 * const entries = streamEntries(await redis.xreadgroup('GROUP', group, me, 'STREAMS', stream, '>'))
 */
export function streamEntries(reply: unknown): Entry[] {
  if (reply === null || reply === undefined) return []
  if (reply instanceof Map) return [...reply.values()].flat() as Entry[]
  if (Array.isArray(reply)) {
    if (typeof reply[0] === 'string' || reply[0] instanceof Uint8Array) {
      const entries: Entry[] = []
      for (let i = 1; i < reply.length; i += 2) entries.push(...(reply[i] as Entry[]))
      return entries
    }
    return (reply as [string, Entry[]][]).flatMap(([, entries]) => entries)
  }
  if (typeof reply === 'object') return Object.values(reply as Record<string, Entry[]>).flat()
  throw new TypeError(`unexpected XREADGROUP reply: ${JSON.stringify(reply)}`)
}
