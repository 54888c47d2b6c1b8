// An in-process at-least-once broker, standing in for RabbitMQ or SQS so the demo runs
// with no set-up: a message stays in flight until acked, and a worker that dies before
// acking gets it redelivered, exactly the behaviour that makes consumers see duplicates.

export function createBroker() {
  const ready = []
  const inFlight = new Map()
  let nextId = 1
  let redeliveries = 0
  return {
    publish(body) {
      const message = { id: `msg-${nextId++}`, body, deliveries: 0 }
      ready.push(message)
      return message.id
    },
    /** The next message, or undefined when none is ready. */
    receive() {
      const message = ready.shift()
      if (message === undefined) return undefined
      message.deliveries++
      inFlight.set(message.id, message)
      return message
    },
    ack(message) {
      inFlight.delete(message.id)
    },
    /** The consumer died before acking: the broker redelivers. */
    redeliver(message) {
      inFlight.delete(message.id)
      redeliveries++
      ready.push(message)
    },
    pending: () => ready.length + inFlight.size,
    redeliveries: () => redeliveries,
  }
}
