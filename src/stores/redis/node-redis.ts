import type { Transport } from './transport.js'
import { clusterSlot } from './slot.js'
import type { NodeRedisClient, NodeRedisCluster } from './types.js'

/** A node-redis (redis 4, 5 or 6) `createClient()` client. */
export function nodeRedisTransport(client: NodeRedisClient): Transport {
  return {
    commandTimeoutMs: undefined,
    raw: { kind: 'args', sendCommand: client.sendCommand.bind(client) },
    send: (command) => client.sendCommand(command),
    sendThenWait: (command, _key, wait) => together(client, command, wait),
    infos: async () => [String(await client.sendCommand(['INFO', 'server']))],
  }
}

/**
 * A node-redis (redis 4, 5 or 6) `createCluster()` client. A write and its `WAIT` go to
 * the client of the master holding the write's key, found by its slot, so that they
 * share one connection (the Cluster's own `multi` differs between versions).
 */
export function nodeRedisClusterTransport(cluster: NodeRedisCluster): Transport {
  const nodeOf = async (key: string): Promise<NodeRedisClient> => await cluster.nodeClient(cluster.getSlotMaster(clusterSlot(key)))
  return {
    commandTimeoutMs: undefined,
    raw: { kind: 'cluster', sendCommand: cluster.sendCommand.bind(cluster) },
    send: (command, key) => cluster.sendCommand(key, false, command),
    sendThenWait: async (command, key, wait) => await together(await nodeOf(key), command, wait),
    async infos() {
      const masters = cluster.getMasters()
      // Before it connected the Cluster knows no master: its own answer says why.
      if (masters.length === 0) return [String(await cluster.sendCommand(undefined, true, ['INFO', 'server']))]
      return await Promise.all(masters.map(async (master) => String(await (await cluster.nodeClient(master)).sendCommand(['INFO', 'server']))))
    },
  }
}

/**
 * Sends `command` and `wait` in the same tick, so that node-redis writes them to the
 * socket together, in order, on one connection; both replies, the command's error first.
 */
async function together(client: NodeRedisClient, command: string[], wait: string[]): Promise<[unknown, unknown]> {
  const [ran, waited] = await Promise.allSettled([client.sendCommand(command), client.sendCommand(wait)])
  if (ran.status === 'rejected') throw ran.reason
  if (waited.status === 'rejected') throw waited.reason
  return [ran.value, waited.value]
}
