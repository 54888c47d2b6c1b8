import { InvalidOptionError } from '../core/errors/invalid-option.js'
import { assertCount, assertKnownOptions, optionNames } from '../core/errors/option-checks.js'
import type { DeadLetterRow, WithDeadLetterTable } from '../ports/dead-letter-table.js'

export type { DeadLetterRow } from '../ports/dead-letter-table.js'

/** Which dead letters `listDeadLetters` returns: inbox or outbox, one consumer or topic, how many. */
export interface ListDeadLettersOptions {
  source: 'inbox' | 'outbox'
  /** Only this consumer or topic. */
  name?: string
  /** @default 100 */
  limit?: number
}

const OPTIONS = optionNames<ListDeadLettersOptions>({ source: true, name: true, limit: true })

/**
 * Reads dead letters, newest first, for an operator or an alert.
 * @example const letters = await listDeadLetters(store, { source: 'inbox', name: 'claims-intake' })
 */
export async function listDeadLetters(store: WithDeadLetterTable, options: ListDeadLettersOptions): Promise<DeadLetterRow[]> {
  assertKnownOptions('listDeadLetters', options, OPTIONS)
  const { source, name, limit = 100 } = options
  const table = (store as Partial<WithDeadLetterTable> | null)?.deadLetters
  if (table === undefined || table === null || typeof table.list !== 'function') {
    throw new InvalidOptionError('listDeadLetters: pass a store that keeps dead letters (postgresStore, sqliteStore, memoryStore)')
  }
  if (source !== 'inbox' && source !== 'outbox') throw new InvalidOptionError('listDeadLetters: option "source" must be "inbox" or "outbox"')
  assertCount('listDeadLetters: option "limit"', limit, 1, 100_000)
  return table.list({ source, name: name ?? null, limit })
}
