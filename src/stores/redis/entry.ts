import type { Redis } from 'ioredis'
import { masked } from '../../core/errors/credentials.js'
import type { StoreEntry, StoreFlags, StoreTarget } from '../../ports/store-entry.js'
import { checkedUrl, connectionError, loadPeer, shellWord } from '../cli-kit.js'

/** Redis (and Valkey) as the `idem` command reaches it: `--redis <url>` and `--prefix`. */
export const entry: StoreEntry = {
  name: 'redis',
  title: 'Redis',
  exports: { subpath: './redis', module: './dist/stores/redis/index.js' },
  peer: 'ioredis',
  cli: {
    value: '<url>',
    help: 'Redis URL (redis://[user:password@]host[:port][/db])',
    options: [{ flags: '--prefix <prefix>', help: "prefix of idem's Redis keys", default: 'idem:' }],
    // No migrate, stats or uninstall: each of idem's keys carries its retention and goes by itself.
    commands: ['prune', 'inspect'],
    target: redisTarget,
  },
}

function redisTarget(given: string, options: StoreFlags): StoreTarget {
  const url = checkedUrl({ flag: 'redis', name: 'Redis', protocols: ['redis:', 'rediss:'], example: 'redis://127.0.0.1:6379' }, given)
  const prefix = typeof options.prefix === 'string' ? options.prefix : 'idem:'
  const flags = `--redis ${shellWord(masked(url))}`
  return {
    flags,
    secrets: [url],
    withOperator: (_access, work) =>
      withRedis(url, async (client) => {
        const { redisOperator } = await import('./operator.js')
        return work(redisOperator({ client, prefix }))
      }),
  }
}

// ioredis exports the client class by name from 5.2.5; before that only as the default.
const loadRedis = () =>
  loadPeer('ioredis', 'Redis', async () => {
    const ioredis = await import('ioredis')
    return ioredis.Redis ?? ioredis.default
  })

/** Connects to Redis (no retries: a command should fail at once and say why), runs `work`, and quits. */
async function withRedis<T>(url: string, work: (client: Redis) => Promise<T>): Promise<T> {
  const RedisClient = await loadRedis()
  const client = new RedisClient(url, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 5_000, enableOfflineQueue: false, retryStrategy: () => null })
  // ioredis rejects connect() with "Connection is closed"; the socket's own error says why.
  let cause: unknown
  client.on('error', (error: unknown) => (cause ??= error))
  try {
    await client.connect().catch((error: unknown) => {
      throw connectionError('Redis', url, cause ?? error)
    })
    return await work(client)
  } finally {
    client.disconnect()
  }
}
