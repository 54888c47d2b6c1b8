import { InvalidOptionError } from '../../core/errors/invalid-option.js'

/** What the store needs to know of the server(s) behind a client, read once per client. */
export interface ServerTraits {
  /** `redis` or `valkey` (Valkey also reports a `redis_version`, of the Redis it is compatible with). */
  readonly server: 'redis' | 'valkey'
  /** The lowest version among the servers asked (every master of a Cluster). */
  readonly version: string
  /** Whether every server asked has `SET … IFEQ` (Redis 8.4 and later, Valkey 8.1 and later). */
  readonly setIfEq: boolean
}

/** The oldest server the store runs on: `SET … NX GET` came with Redis 7.0 (and Valkey 7.2, its first release). */
const MIN_REDIS_VERSION = '7.0.0'

// SET … IFEQ: Redis 8.4, Valkey 8.1.
const IFEQ_SINCE = { redis: [8, 4], valkey: [8, 1] } as const

/**
 * The traits of the servers whose `INFO server` replies these are (one per master),
 * their lowest version taken.
 * @throws InvalidOptionError naming the version found and the minimum, below 7.0
 */
export function serverTraits(infos: readonly string[]): ServerTraits {
  const servers = infos.map(parseInfo)
  if (servers.length === 0) throw new Error('no Redis server answered INFO')
  const oldest = servers.reduce((a, b) => (compare(b.parts, a.parts) < 0 ? b : a))
  if (compare(oldest.parts, [7, 0]) < 0) {
    const name = oldest.server === 'valkey' ? 'Valkey' : 'Redis'
    throw new InvalidOptionError(
      `redisStore: option "client" reaches ${name} ${oldest.version}; idem needs Redis ${MIN_REDIS_VERSION} or later (or Valkey 7.2 or later): it claims a key with SET … NX GET`,
    )
  }
  return {
    server: oldest.server,
    version: oldest.version,
    setIfEq: servers.every((s) => compare(s.parts, IFEQ_SINCE[s.server]) >= 0),
  }
}

interface Server {
  server: 'redis' | 'valkey'
  version: string
  parts: number[]
}

function parseInfo(info: string): Server {
  const fields = new Map<string, string>()
  for (const line of info.split('\n')) {
    const colon = line.indexOf(':')
    if (colon > 0) fields.set(line.slice(0, colon), line.slice(colon + 1).trim())
  }
  const valkey = fields.get('server_name') === 'valkey' || fields.has('valkey_version')
  const version = (valkey ? fields.get('valkey_version') : undefined) ?? fields.get('redis_version')
  if (version === undefined || !/^\d+\.\d+/.test(version)) throw new Error(`INFO server named no version: ${JSON.stringify(info.slice(0, 200))}`)
  return { server: valkey ? 'valkey' : 'redis', version, parts: version.split('.').map((part) => Number.parseInt(part, 10) || 0) }
}

function compare(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const d = (a[i] ?? 0) - (b[i] ?? 0)
    if (d !== 0) return d
  }
  return 0
}
