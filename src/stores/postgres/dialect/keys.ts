import type { Claim } from '../../../core/store.js'
import { claimFunctionName, keyLockId, KEYS, KEYS_BY_DAY, type KeyTableShape } from './key-claim.js'
import { named, quoteSchema, type NamedStatement, type Statement } from './statement.js'

// ---- idem_keys (migration 1) and idem_keys_by_day (migration 6): the transactional engine's key records ----

/**
 * A table the transactional store keeps keys in, as the statements it runs on it:
 * `idem_keys` or `idem_keys_by_day` (every call: fingerprint and outcome; the inbox has
 * its own statements, in inbox.ts). A row holds `scope`, `key`, `fingerprint`, `outcome`,
 * `created_at` (for operators: `idem stats`, `idem inspect`) and `expires_at`; a key
 * being claimed has no row, only its advisory lock. Each statement's text is built
 * once, with the table; a call only builds its values. `prepared` holds the same texts
 * under their names, for the wire to prepare once per connection.
 */
export interface KeyTable {
  /** Tries the key's advisory lock without waiting (`free`: nobody held it), for a peek. */
  tryLock(scope: string, key: string): Statement
  /**
   * Takes the key's advisory lock (waiting up to `waitMs`), then reads the live record,
   * in one statement: `claim`, the value `readClaim` reads.
   */
  claim(scope: string, key: string, waitMs: number): Statement
  /**
   * Reads a key's live record without a transaction or a lock. A committed record is
   * final until it expires, so this alone can answer a retry; finding none says nothing
   * (the key may be held right now), and the call then claims the key as usual.
   */
  lookup(scope: string, key: string): Statement
  /**
   * Writes the record. The caller holds the key's lock, and the claim removed an expired
   * record under it, so a plain INSERT suffices; a row written by anything else meanwhile
   * is a unique violation (`idem_keys`) that rolls the whole transaction back.
   */
  save(scope: string, key: string, fingerprint: string, outcome: string, ttlMs: number): Statement
  readonly prepared: { claim: NamedStatement; lookup: NamedStatement; save: NamedStatement }
}

/** The key table of a store's `keyLayout`: `idem_keys` (`'table'`) or `idem_keys_by_day` (`'daily-partitions'`). */
export function keyTable(schema: string, layout: 'table' | 'daily-partitions'): KeyTable {
  const shape: KeyTableShape = layout === 'table' ? KEYS : KEYS_BY_DAY
  const s = quoteSchema(schema)
  const table = `${s}.${shape.table}`
  const texts = {
    claim: `SELECT ${s}.${claimFunctionName(shape)}($1, $2, $3) AS claim`,
    lookup: `SELECT fingerprint, outcome FROM ${table} WHERE scope = $1 AND key = $2 AND expires_at > now()`,
    save:
      `INSERT INTO ${table} (scope, key, fingerprint, outcome, created_at, expires_at) ` +
      `VALUES ($1, $2, $3, $4, now(), now() + $5 * interval '1 millisecond')`,
    tryLock: `SELECT pg_try_advisory_xact_lock(${keyLockId('$1', '$2', shape.seed)}) AS free`,
  }
  return {
    tryLock: (scope, key) => ({ text: texts.tryLock, values: [scope, key] }),
    claim: (scope, key, waitMs) => ({ text: texts.claim, values: [scope, key, waitMs] }),
    lookup: (scope, key) => ({ text: texts.lookup, values: [scope, key] }),
    save: (scope, key, fingerprint, outcome, ttlMs) => ({ text: texts.save, values: [scope, key, fingerprint, outcome, ttlMs] }),
    prepared: { claim: named('claim', texts.claim), lookup: named('lookup', texts.lookup), save: named('save', texts.save) },
  }
}

// Claims that carry nothing are made once.
const NEW: Claim = { state: 'new' }
const LOCKED: Claim = { state: 'locked' }
const STALE: Claim = { state: 'stale' }
const DIGITS = /^[0-9]{1,9}$/

/**
 * The claim a claim function's value says (see `claimFunction` in key-claim.ts).
 * @throws Error when the value is none of its forms
 */
export function readClaim(value: unknown): Claim {
  if (value === 'n') return NEW
  if (value === 'l') return LOCKED
  if (value === 's') return STALE
  if (typeof value === 'string' && value.startsWith('f')) {
    const colon = value.indexOf(':')
    const length = value.slice(1, colon)
    const end = colon > 1 && DIGITS.test(length) ? afterCharacters(value, colon + 1, Number(length)) : -1
    if (end !== -1) return { state: 'found', record: { fingerprint: value.slice(colon + 1, end), outcome: value.slice(end) } }
  }
  throw new Error(`a key claim returned an unexpected value: ${JSON.stringify(typeof value === 'string' ? value.slice(0, 80) : value)}`)
}

/**
 * Where `count` characters (code points, as Postgres counts them) starting at `from`
 * end in `text`, or -1 when the text is shorter.
 */
function afterCharacters(text: string, from: number, count: number): number {
  let at = from
  for (let i = 0; i < count; i++) {
    if (at >= text.length) return -1
    const code = text.charCodeAt(at)
    at += code >= 0xd800 && code <= 0xdbff ? 2 : 1
  }
  return at <= text.length ? at : -1
}
