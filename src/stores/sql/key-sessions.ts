import type { BeginRequest, Claim, KeyRecord, KeyStore, NewRecord, Session } from '../../ports/key-store.js'
import type { KeyStatement, KeyStatements } from './dialect.js'
import type { Connection, Joined, StoreDriver } from './driver.js'
import type { Step } from './statement.js'

/**
 * The transactional protocol of a SQL store's keys, written once over its dialect's
 * statements and its driver: the `KeyStore` of one key table. A call's session is one
 * of three:
 * - `OwnedSession`: the key claimed in a transaction of the store's own, in the round
 *   trip that opens it; its record written in the round trip that commits it;
 * - `SettledSession`: a retry answered by its record, read outside any transaction (every
 *   key, or the keys this store recorded lately: `readFirst`), or a key another call
 *   held past the wait where the driver holds keys in process;
 * - `JoinedSession`: the key claimed in the caller's transaction.
 * This file is the whole of a fresh request's path in the protocol: the statements are
 * built with the store, and a call only binds their values.
 */
export function keySessions<Tx>(keys: KeyStatements, driver: StoreDriver<Tx, boolean | Promise<boolean>>): Pick<KeyStore<Tx>, 'begin'> {
  const sessions = new KeySessions(keys, driver)
  return { begin: (request) => sessions.begin(request) }
}

// Enough for the retries of the last seconds of a busy service, in about a megabyte at most.
const RECENT_KEYS = 10_000

/** The sessions over one key table, and what they all share: made once, with the store. */
class KeySessions<Tx> {
  readonly opening: Step
  readonly commit: Step
  /** Keys this store committed lately, where only they are read first. */
  readonly recorded: RecentKeys | undefined

  constructor(
    readonly keys: KeyStatements,
    readonly driver: StoreDriver<Tx, boolean | Promise<boolean>>,
  ) {
    this.opening = { statement: keys.opening }
    this.commit = { statement: keys.commit }
    this.recorded = keys.readFirst === 'recorded keys' ? new RecentKeys(RECENT_KEYS) : undefined
  }

  async begin({ scope, key, waitMs, tx }: BeginRequest<Tx>): Promise<Session<Tx>> {
    const { keys, driver, recorded } = this
    if (tx !== undefined) return JoinedSession.open(keys, driver.join(tx, 'run'), scope, key, waitMs)
    if (recorded === undefined || recorded.has(scope, key)) {
      // Most likely answered by its record: one read, and nothing to end afterwards.
      const read = await driver.lookup(bound(keys.lookup, scope, key, waitMs))
      const row = read?.rows[0] as KeyRecord | undefined
      if (read !== undefined && row !== undefined) return new SettledSession(read.tx, { state: 'found', record: { fingerprint: row.fingerprint, outcome: row.outcome } })
      recorded?.delete(scope, key)
    }
    const connection = await driver.connect({ scope, key, waitMs })
    if (connection.locked === true) return new SettledSession(connection.tx, LOCKED)
    let claim: Claim
    try {
      const opened = await connection.send(keys.owned ? [bound(keys.owned.claim, scope, key, waitMs)] : [this.opening, bound(keys.claim, scope, key, waitMs)], 'opens')
      claim = readClaim(opened[opened.length - 1]?.rows[0])
    } catch (error) {
      await connection.end(error)
      throw error
    }
    return fences(connection) ? new FencedSession(this, connection, claim, scope, key) : new OwnedSession(this, connection, claim, scope, key)
  }
}

/**
 * A transaction of the store's own, open on a connection of its own from the round trip
 * that opened it until `finish`, `rollback` or `abandon` ends it (the first to come; the
 * others then do nothing): what a key's and an inbox id's sessions share.
 */
export class HeldTransaction<Tx> {
  readonly tx: Tx
  protected readonly connection: Connection<Tx>
  #ended = false

  constructor(connection: Connection<Tx>) {
    this.tx = connection.tx
    this.connection = connection
  }

  lost(): Error | undefined {
    return this.connection.lost
  }

  async rollback(): Promise<void> {
    if (this.ends()) await this.connection.end()
  }

  /** Sends `steps` (the last one the commit) and hands the connection back; ends it instead when they fail. */
  protected async finish(steps: readonly Step[]): Promise<void> {
    this.ends()
    const { connection } = this
    try {
      await connection.send(steps, 'inside')
    } catch (error) {
      await connection.end(error)
      throw error
    }
    connection.release()
  }

  /** Marks the transaction ended: true for the first call, false once it was. */
  protected ends(): boolean {
    if (this.#ended) return false
    this.#ended = true
    return true
  }
}

/** A connection that can be ended while the call's function still holds it (`Session.abandon`): its sessions offer that. */
export type Fenced<Tx> = Connection<Tx> & { abandon(): Promise<void> }

/** Whether the driver can end `connection` under the call's function (it has `abandon`). */
export function fences<Tx>(connection: Connection<Tx>): connection is Fenced<Tx> {
  return connection.abandon !== undefined
}

/**
 * A key claimed in a transaction of the store's own, its record written in the round
 * trip that commits it. A class, not an object of closures: one is built for every
 * fresh call, its methods never.
 */
class OwnedSession<Tx> extends HeldTransaction<Tx> implements Session<Tx> {
  readonly joined = false

  constructor(private readonly context: KeySessions<Tx>, connection: Connection<Tx>, readonly claim: Claim, private readonly scope: string, private readonly key: string) {
    super(connection)
  }

  async commit(record: NewRecord): Promise<void> {
    const { context } = this
    const { owned, save } = context.keys
    await this.finish(owned ? [bound(owned.save, this.scope, this.key, 0, record)] : [bound(save, this.scope, this.key, 0, record), context.commit])
    context.recorded?.add(this.scope, this.key)
  }
}

/** An owned session whose connection can be ended while the function still holds it. */
class FencedSession<Tx> extends OwnedSession<Tx> {
  declare protected readonly connection: Fenced<Tx>

  // The function may still be using the connection: it is closed, not handed back.
  async abandon(): Promise<void> {
    if (this.ends()) await this.connection.abandon()
  }
}

/**
 * A key claimed inside the caller's open transaction (`run`'s option `tx`), waiting up to
 * `waitMs` for its lock where the database waits: `commit` only writes the record, and
 * ending the transaction is the caller's.
 */
class JoinedSession<Tx> implements Session<Tx> {
  readonly joined = true
  readonly tx: Tx

  static async open<Tx>(keys: KeyStatements, transaction: Joined<Tx, boolean | Promise<boolean>>, scope: string, key: string, waitMs: number): Promise<JoinedSession<Tx>> {
    const [claimed] = await transaction.send([bound(keys.claim, scope, key, waitMs)])
    return new JoinedSession(keys, transaction, readClaim(claimed?.rows[0]), scope, key)
  }

  private constructor(private readonly keys: KeyStatements, private readonly transaction: Joined<Tx, boolean | Promise<boolean>>, readonly claim: Claim, private readonly scope: string, private readonly key: string) {
    this.tx = transaction.tx
  }

  async commit(record: NewRecord): Promise<void> {
    await this.transaction.send([bound(this.keys.save, this.scope, this.key, 0, record)])
    this.transaction.recorded?.()
  }

  async rollback(): Promise<void> {}
}

/** A session that holds nothing and has nothing to end: a retry answered by its record, or a key locked past the wait. */
class SettledSession<Tx> implements Session<Tx> {
  readonly joined = false

  constructor(
    /** Never written through. */
    readonly tx: Tx,
    readonly claim: Claim,
  ) {}

  async commit(): Promise<void> {
    throw new Error('idem: a settled key has nothing to commit')
  }

  async rollback(): Promise<void> {}
}

/** A key statement bound to a call's values, in the order it takes them. */
function bound(statement: KeyStatement, scope: string, key: string, waitMs: number, record?: NewRecord): Step {
  const { takes } = statement
  const values: unknown[] = new Array(takes.length)
  let now = 0
  for (let i = 0; i < takes.length; i++) {
    switch (takes[i]) {
      case 'scope': values[i] = scope; break
      case 'key': values[i] = key; break
      case 'waitMs': values[i] = waitMs; break
      case 'fingerprint': values[i] = record?.fingerprint; break
      case 'outcome': values[i] = record?.outcome; break
      case 'ttlMs': values[i] = record?.ttlMs; break
      case 'now': values[i] = now ||= Date.now(); break
      case 'expiresAt': values[i] = (now ||= Date.now()) + (record?.ttlMs ?? 0); break
    }
  }
  return { statement: statement.statement, values }
}

// Claims that carry nothing are made once.
const NEW: Claim = { state: 'new' }
const LOCKED: Claim = { state: 'locked' }
const STALE: Claim = { state: 'stale' }
const DIGITS = /^[0-9]{1,9}$/

/**
 * The claim a claim statement's row says: none for a new key, else its column `claim`,
 * the claim as one value: `n` new, `l` locked, `s` stale, or `f`, the fingerprint's
 * length in characters (code points), `:`, the fingerprint and the outcome (found).
 * One value because that is what a call costs Postgres least (see key-claim.ts there).
 * @throws Error when the value is none of its forms
 */
export function readClaim(row: unknown): Claim {
  if (row === undefined) return NEW
  const value = (row as { claim?: unknown }).claim
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

/** Where `count` characters (code points) starting at `from` end in `text`, or -1 when the text is shorter. */
function afterCharacters(text: string, from: number, count: number): number {
  let at = from
  for (let i = 0; i < count; i++) {
    if (at >= text.length) return -1
    const code = text.charCodeAt(at)
    at += code >= 0xd800 && code <= 0xdbff ? 2 : 1
  }
  return at <= text.length ? at : -1
}

/**
 * Keys a store recorded lately (committed itself), so that a retry of one can be
 * answered by a plain read instead of a transaction. Being wrong costs one read and
 * never a wrong answer: the read is of committed records only, and a key it does not
 * find is claimed as usual. Bounded: the oldest entries go first.
 */
export class RecentKeys {
  // Keys by scope, rather than one set of joined strings: a scope is usually one string
  // used over and over, and a key the same string from the check to the add, so each
  // keeps its hash and nothing is built per call (a joined string cost a few µs a call).
  readonly #scopes = new Map<string, Set<string>>()
  // The entries in the order they came, in a ring: the next to go is at #next. (Taking
  // the oldest from a Set's iterator instead costs a scan past every entry deleted
  // before it: measured 5 µs an add once full.)
  readonly #orderScopes: string[] = []
  readonly #orderKeys: string[] = []
  #next = 0
  constructor(readonly limit: number) {}

  has(scope: string, key: string): boolean {
    return this.#scopes.get(scope)?.has(key) === true
  }

  add(scope: string, key: string): void {
    if (this.has(scope, key)) return
    if (this.#orderKeys.length < this.limit) {
      this.#orderScopes.push(scope)
      this.#orderKeys.push(key)
    } else {
      // The oldest goes first, before this key's set is looked up: it may empty that set.
      this.delete(this.#orderScopes[this.#next]!, this.#orderKeys[this.#next]!)
      this.#orderScopes[this.#next] = scope
      this.#orderKeys[this.#next] = key
      this.#next = (this.#next + 1) % this.limit
    }
    let keys = this.#scopes.get(scope)
    if (keys === undefined) this.#scopes.set(scope, (keys = new Set()))
    keys.add(key)
  }

  /** Forgets a key (its record is gone); its place in the ring is freed when its turn comes. */
  delete(scope: string, key: string): void {
    const keys = this.#scopes.get(scope)
    if (keys === undefined || !keys.delete(key)) return
    if (keys.size === 0) this.#scopes.delete(scope)
  }
}
