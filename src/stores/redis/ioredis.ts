import type { Transport } from './transport.js'
import type { IoRedisClient } from './types.js'

/**
 * An ioredis (or iovalkey, its fork with the same API) `Redis` or `Cluster`: `call`
 * sends any command (a Cluster routes it by its keys and follows MOVED and ASK), and a
 * pipeline sends a write and its `WAIT` in one round trip to one node. ioredis fails a
 * pipeline cut short by a lost connection as a whole and never sends its rest again
 * alone, so a `WAIT` never runs on a new connection (where it would count replicas that
 * have nothing of ours).
 */
export function ioRedisTransport(client: IoRedisClient): Transport {
  return {
    commandTimeoutMs: commandTimeoutOf(client),
    raw: { kind: 'call', call: client.call.bind(client) },
    send: (command) => client.call(nameOf(command), ...command.slice(1)),
    async sendThenWait(command, _key, wait) {
      let replies: Array<[Error | null, unknown]> | null
      try {
        replies = await client.pipeline().call(nameOf(command), ...command.slice(1)).call(nameOf(wait), ...wait.slice(1)).exec()
      } catch (error) {
        // On Cluster, ioredis refuses a pipelined command whose keys are in different slots
        // before sending it; Redis would have answered CROSSSLOT (a key an inbox handler
        // staged outside the message's slot), and retrying never helps.
        if (error instanceof Error && error.message.startsWith('All the keys in a pipeline command should belong to the same slot')) {
          throw new Error(`CROSSSLOT Keys in request don't hash to the same slot (${error.message})`, { cause: error })
        }
        throw error
      }
      const [ran, waited] = replies ?? []
      if (ran === undefined || waited === undefined) throw new Error('the pipeline of a write and WAIT was discarded')
      if (ran[0]) throw ran[0]
      if (waited[0]) throw waited[0]
      return [ran[1], waited[1]]
    },
    async infos() {
      const info = String(await client.call('INFO', 'server'))
      // A Cluster knows its masters once it has answered a command.
      const masters = client.nodes?.('master') ?? []
      return masters.length === 0 ? [info] : Promise.all(masters.map(async (node) => String(await node.call('INFO', 'server'))))
    },
  }
}

/**
 * A command's name in lower case: iovalkey and ioredis 5 find a command's keys (which
 * route it on a Cluster, and a pipeline with it) only by its lower-case name; without
 * them the command goes to any node and, in a pipeline with a WAIT, is not sent again
 * when that node answers MOVED.
 */
function nameOf(command: string[]): string {
  return command[0]!.toLowerCase()
}

/**
 * A standalone client's own `commandTimeout`, if set. A Cluster's is not one: commands
 * wait in the Cluster's own queue, without it, while it connects.
 */
function commandTimeoutOf(client: IoRedisClient): number | undefined {
  if (client.isCluster || !('options' in client) || client.options === null || typeof client.options !== 'object') return undefined
  const { options } = client
  return 'commandTimeout' in options && typeof options.commandTimeout === 'number' ? options.commandTimeout : undefined
}
