// The Redis clients idem's Redis variants run on in bench:peers, each a factory, so that
// the client is a dimension of a variant (data) and not code in it. Here, in bench/, so
// that `ioredis` and `redis` resolve to the repository's own node_modules: node-redis 6,
// not the 4.x that bench/peers/node_modules holds for a peer's storage adapter.
import { readFileSync } from 'node:fs'

/**
 * By name: `label`, the npm `package` it comes from, `connect(url)` resolving with the
 * connected `{ client, close }`. idem's redisStore takes each of them.
 */
export const REDIS_CLIENTS = {
  ioredis: { label: 'ioredis, enableAutoPipelining', package: 'ioredis', connect: (url) => ioredis(url, true) },
  'ioredis-plain': { label: 'ioredis, without autopipelining', package: 'ioredis', connect: (url) => ioredis(url, false) },
  'node-redis': { label: 'node-redis (createClient)', package: 'redis', connect: nodeRedis },
}

async function ioredis(url, enableAutoPipelining) {
  const { Redis } = await import('ioredis')
  const client = new Redis(url, { enableAutoPipelining })
  return { client, close: () => client.quit() }
}

/** node-redis writes the commands of one tick together by itself: there is no setting for it. */
async function nodeRedis(url) {
  const { createClient } = await import('redis')
  const client = await createClient({ url }).connect()
  return { client, close: () => client.close() }
}

/** The version of a package in the repository's node_modules, or undefined. */
export function repositoryVersion(name) {
  try {
    return JSON.parse(readFileSync(new URL(`../node_modules/${name}/package.json`, import.meta.url), 'utf8')).version
  } catch {
    return undefined
  }
}
