import { MissingKeyError } from '../../core/errors/missing-key.js'
import type { InboxContext } from './context.js'
import type { InboxMessage } from './types.js'

/**
 * The message's id: what `idOf` derives from it, else the broker's `id`.
 * @throws MissingKeyError when there is none (or `idOf` threw)
 */
export function idOfMessage<Tx, Body>({ idOf, consumer }: InboxContext<Tx, Body>, message: InboxMessage<Body>): string {
  let id: unknown
  if (idOf !== undefined) {
    try {
      id = idOf(message)
    } catch (cause) {
      throw new MissingKeyError(`inbox "${consumer}": idOf threw: ${(cause as Error)?.message ?? String(cause)}`, { cause })
    }
  } else {
    id = message?.id
  }
  if (typeof id !== 'string' || id.length === 0) {
    throw new MissingKeyError(
      `inbox "${consumer}": the message has no id${idOf === undefined ? '; have the producer set one (e.g. AMQP messageId) or pass "idOf"' : ' (idOf returned none)'}`,
    )
  }
  return id
}
