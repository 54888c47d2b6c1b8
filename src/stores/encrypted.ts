import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'
import { InvalidOptionError } from '../core/errors/invalid-option.js'
import { assertKnownOptions, optionNames } from '../core/validate.js'
import { OutcomeUnreadableError } from '../core/errors/outcome-unreadable.js'
import type { KeyPeek, PeekResult } from '../core/dual-read.js'
import type { LeaseClaim, LeasedStore } from '../core/leased/store.js'
import type { KeyRecord, KeyStore, NewRecord, Session } from '../core/store.js'
import type { WithOnceTable } from '../ports/once-table.js'
import type { WithDeadLetterTable } from '../ports/dead-letter-table.js'
import type { WithInboxTable } from '../ports/inbox-table.js'
import type { WithOutboxTable } from '../ports/outbox-table.js'

/** Options of `encryptedStore`. */
export interface EncryptionOptions {
  /**
   * The keys outcomes may be encrypted with, by key id: 32 bytes each (a `Uint8Array`
   * or `Buffer`, or their base64). Rows name the key id they were written with, so a
   * key stays here as long as rows written with it are kept (`ttlMs`).
   */
  keys: Readonly<Record<string, Uint8Array | string>>
  /** The key id new rows are written with; one of `keys`. */
  current: string
  /**
   * Accept rows that were stored unencrypted (written before encryption was turned on)
   * and replay them as they are. Off by default: a plaintext row is then an
   * `OutcomeUnreadableError`, as any row that fails authentication is.
   * @default false
   */
  acceptPlaintext?: boolean
}

const PREFIX = 'idem:enc:v1:'
const KEY_ID = /^[A-Za-z0-9._-]{1,64}$/
const IV_BYTES = 12
const TAG_BYTES = 16

/** The ports that hold no outcome (the last four of `EncryptedStore`): forwarded by name, as they are; the type makes each one listed. */
const UNENCRYPTED_PORTS: Record<Exclude<keyof (WithInboxTable<unknown> & WithOutboxTable<unknown> & WithDeadLetterTable & WithOnceTable<unknown>), 'name'>, true> = {
  inbox: true,
  outbox: true,
  deadLetters: true,
  once: true,
}

/**
 * What `encryptedStore` returns: the store's outcome ports (`KeyStore`, `LeasedStore`,
 * `KeyPeek`), each method its own, encrypting what it writes and decrypting what it
 * reads, and the store's ports that hold no outcome (`inbox`, `outbox`, `deadLetters`,
 * `once`) forwarded as they are. Nothing else of the store is kept (run `migrate`,
 * `prune` or `createTable` on the store you wrapped), so a method added to a store
 * never reaches its outcomes around the wrapper.
 */
export type EncryptedStore<S> = Pick<
  S,
  Extract<
    keyof S,
    | keyof KeyStore<unknown>
    | keyof LeasedStore
    | keyof KeyPeek
    | keyof WithInboxTable<unknown>
    | keyof WithOutboxTable<unknown>
    | keyof WithDeadLetterTable
    | keyof WithOnceTable<unknown>
  >
>

/**
 * Wraps a store so that the outcomes it keeps (and, for a leased store, the step results)
 * are encrypted at rest with AES-256-GCM. Fingerprints stay as they are (they are
 * hashes); the engines, the front ends and a dual-read window use the wrapped store
 * exactly like the store.
 *
 * Each row holds `idem:enc:v1:<key id>:<base64 of IV, ciphertext, tag>` as a JSON
 * string, so it fits any column that holds the outcome's JSON. The scope, the key (and
 * the step's name) are authenticated with it: a row copied onto another key fails to
 * decrypt instead of replaying there. Rotation: add the new key, make it `current`,
 * and keep the old id in `keys` until its rows expire; rows are read with whichever
 * key id they name. A row that fails (unknown key id, a changed byte, a plaintext row
 * without `acceptPlaintext`) fails its call with `OutcomeUnreadableError` and runs
 * nothing again.
 *
 * Every read of a stored outcome (`begin`'s found record, `claim`'s completed record,
 * `peek`'s) goes through one decryption, and every method of the `KeyStore`,
 * `LeasedStore` and `KeyPeek` ports is the wrapper's own. The store's other ports (the
 * inbox's ids, the outbox's payloads, dead letters, `once` marks) are forwarded
 * unencrypted; its maintenance methods are not kept (see `EncryptedStore`).
 * @example
 * const plain = postgresStore({ pool })
 * await plain.migrate()
 * const store = encryptedStore(plain, { keys: { k2: process.env.IDEM_KEY_2!, k1: process.env.IDEM_KEY_1! }, current: 'k2' })
 */
export function encryptedStore<S extends KeyStore<unknown> | LeasedStore>(store: S, options: EncryptionOptions): EncryptedStore<S> {
  const cipher = recordCipher(outcomeCipher(options))
  const keyStore = hasMethods<KeyStore<unknown>>(store, ['begin'])
  const leased = hasMethods<LeasedStore>(store, ['claim', 'renew', 'saveStep', 'complete', 'release'])
  if (!keyStore && !leased) {
    throw new InvalidOptionError('encryptedStore: the first argument must be a key store (postgresStore(...)) or a leased store (redisStore(...))')
  }
  const encrypted: Record<string, unknown> = {
    name: store.name,
    ...(keyStore && encryptKeyStore(store, cipher)),
    ...(leased && encryptLeasedStore(store, cipher)),
    ...(hasMethods<KeyPeek>(store, ['peek']) && encryptPeek(store, cipher)),
  }
  for (const port of Object.keys(UNENCRYPTED_PORTS)) if (port in store) encrypted[port] = Reflect.get(store, port)
  return encrypted as EncryptedStore<S>
}

function hasMethods<T>(store: unknown, methods: ReadonlyArray<keyof T & string>): store is T {
  return store !== null && typeof store === 'object' && methods.every((method) => typeof Reflect.get(store, method) === 'function')
}

interface OutcomeCipher {
  seal(text: string, ...context: string[]): string
  open(stored: string, ...context: string[]): string
  /** The largest text (UTF-8 bytes) whose sealed form is at most `sealedBytes`: what the wrapped store holds of `maxOutcomeBytes`. */
  capacity(sealedBytes: number): number
}

/** Outcomes and step results sealed to their key: the one place every port method seals and opens them. */
interface RecordCipher {
  sealOutcome(outcome: string, scope: string, key: string): string
  /** The read path of every stored record: `begin`'s found, `claim`'s completed, `peek`'s completed. */
  openRecord(record: KeyRecord, scope: string, key: string): KeyRecord
  sealStep(result: string, scope: string, key: string, name: string): string
  openSteps(steps: ReadonlyMap<string, string>, scope: string, key: string): ReadonlyMap<string, string>
  /** The largest outcome (UTF-8 bytes) whose sealed form the wrapped store holds, of its `maxOutcomeBytes`. */
  capacity(sealedBytes: number): number
}

function recordCipher(cipher: OutcomeCipher): RecordCipher {
  return {
    sealOutcome: (outcome, scope, key) => cipher.seal(outcome, 'outcome', scope, key),
    openRecord: (record, scope, key) => ({ fingerprint: record.fingerprint, outcome: cipher.open(record.outcome, 'outcome', scope, key) }),
    sealStep: (result, scope, key, name) => cipher.seal(result, 'step', scope, key, name),
    openSteps(steps, scope, key) {
      const opened = new Map<string, string>()
      for (const [name, result] of steps) opened.set(name, cipher.open(result, 'step', scope, key, name))
      return opened
    },
    capacity: (sealedBytes) => cipher.capacity(sealedBytes),
  }
}

// Each of these returns every member of its port but `name`: a member added to a port
// does not compile here until the wrapper says what it does with it.
function encryptKeyStore<Tx>(store: KeyStore<Tx>, cipher: RecordCipher): Omit<KeyStore<Tx>, 'name'> {
  return {
    maxOutcomeBytes: cipher.capacity(store.maxOutcomeBytes),
    async begin(request) {
      const session = await store.begin(request)
      const { scope, key } = request
      let claim = session.claim
      if (claim.state === 'found') {
        try {
          claim = { state: 'found', record: cipher.openRecord(claim.record, scope, key) }
        } catch (error) {
          await session.rollback()
          throw error
        }
      }
      const sealed: Session<Tx> = {
        tx: session.tx,
        claim,
        joined: session.joined,
        commit: ({ fingerprint, outcome, ttlMs }: NewRecord) => session.commit({ fingerprint, outcome: cipher.sealOutcome(outcome, scope, key), ttlMs }),
        rollback: () => session.rollback(),
      }
      if (session.lost !== undefined) sealed.lost = () => session.lost!()
      if (session.abandon !== undefined) sealed.abandon = () => session.abandon!()
      return sealed
    },
  }
}

function encryptLeasedStore(store: LeasedStore, cipher: RecordCipher): Omit<LeasedStore, 'name'> {
  return {
    maxOutcomeBytes: cipher.capacity(store.maxOutcomeBytes),
    async claim(scope, key, fingerprint, leaseMs, ttlMs) {
      const claim: LeaseClaim = await store.claim(scope, key, fingerprint, leaseMs, ttlMs)
      if (claim.state === 'completed') return { state: 'completed', record: cipher.openRecord(claim.record, scope, key) }
      if (claim.state !== 'acquired' || claim.steps.size === 0) return claim
      try {
        return { state: 'acquired', token: claim.token, steps: cipher.openSteps(claim.steps, scope, key) }
      } catch (error) {
        // The steps stay, bound to the request; the key need not wait out a lease nobody runs.
        await store.release(scope, key, claim.token).catch(() => false)
        throw error
      }
    },
    renew: (scope, key, token, leaseMs) => store.renew(scope, key, token, leaseMs),
    saveStep: (scope, key, token, name, result) => store.saveStep(scope, key, token, name, cipher.sealStep(result, scope, key, name)),
    complete: (scope, key, token, outcome, ttlMs) => store.complete(scope, key, token, cipher.sealOutcome(outcome, scope, key), ttlMs),
    release: (scope, key, token) => store.release(scope, key, token),
  }
}

function encryptPeek(store: KeyPeek, cipher: RecordCipher): Omit<KeyPeek, 'name'> {
  return {
    async peek(scope, key): Promise<PeekResult> {
      const seen = await store.peek(scope, key)
      return seen.state === 'completed' ? { state: 'completed', record: cipher.openRecord(seen.record, scope, key) } : seen
    },
  }
}

const OPTIONS = optionNames<EncryptionOptions>({ keys: true, current: true, acceptPlaintext: true })

function outcomeCipher(options: EncryptionOptions): OutcomeCipher {
  assertKnownOptions('encryptedStore', options, OPTIONS)
  const { keys, current, acceptPlaintext = false } = options
  if (keys === null || typeof keys !== 'object') throw new InvalidOptionError('encryptedStore: option "keys" must be an object of key id → 32-byte key')
  const byId = new Map<string, Buffer>()
  for (const [id, value] of Object.entries(keys)) {
    if (!KEY_ID.test(id)) throw new InvalidOptionError(`encryptedStore: key id ${JSON.stringify(id)} must be 1–64 characters of A–Z, a–z, 0–9, ".", "_", "-"`)
    const bytes = typeof value === 'string' ? Buffer.from(value, 'base64') : value instanceof Uint8Array ? Buffer.from(value) : undefined
    if (bytes === undefined || bytes.length !== 32) {
      throw new InvalidOptionError(`encryptedStore: key ${JSON.stringify(id)} must be 32 bytes (AES-256), as bytes or base64`)
    }
    byId.set(id, bytes)
  }
  if (typeof current !== 'string' || !byId.has(current)) {
    throw new InvalidOptionError(`encryptedStore: option "current" must name one of the keys (${[...byId.keys()].join(', ') || 'none given'})`)
  }
  if (typeof acceptPlaintext !== 'boolean') throw new InvalidOptionError('encryptedStore: option "acceptPlaintext" must be a boolean')
  const currentKey = byId.get(current)!

  // Length-prefixed, so no two (scope, key, name) triples authenticate alike.
  const context = (parts: string[]): Buffer => Buffer.from(parts.map((part) => `${part.length}:${part}`).join('|'), 'utf8')

  // The sealed form's JSON string: quotes, prefix, key id and colon around the base64 of IV, ciphertext and tag.
  const envelopeBytes = 2 + PREFIX.length + current.length + 1
  return {
    capacity(sealedBytes) {
      return Math.floor((sealedBytes - envelopeBytes) / 4) * 3 - IV_BYTES - TAG_BYTES
    },
    seal(text, ...parts) {
      const iv = randomBytes(IV_BYTES)
      const gcm = createCipheriv('aes-256-gcm', currentKey, iv)
      gcm.setAAD(context(parts))
      const sealed = Buffer.concat([iv, gcm.update(text, 'utf8'), gcm.final(), gcm.getAuthTag()])
      return JSON.stringify(`${PREFIX}${current}:${sealed.toString('base64')}`)
    },
    open(stored, ...parts) {
      const envelope = envelopeOf(stored)
      if (envelope === undefined) {
        if (acceptPlaintext) return stored
        throw new OutcomeUnreadableError('The stored outcome is not encrypted (or its envelope is damaged), and acceptPlaintext is off')
      }
      const key = byId.get(envelope.keyId)
      if (key === undefined) {
        throw new OutcomeUnreadableError(`The stored outcome was encrypted with key id ${JSON.stringify(envelope.keyId)}, which this store was not given`)
      }
      const bytes = Buffer.from(envelope.data, 'base64')
      if (bytes.length < IV_BYTES + TAG_BYTES) throw new OutcomeUnreadableError('The stored outcome is truncated')
      // Base64's last character may carry bits the decoder ignores: a row changed there
      // would still open. Only the canonical spelling is the row that was written.
      if (bytes.toString('base64') !== envelope.data) throw new OutcomeUnreadableError('The stored outcome was changed: its encoding is not the one written')
      try {
        const gcm = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, IV_BYTES))
        gcm.setAAD(context(parts))
        gcm.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES))
        return Buffer.concat([gcm.update(bytes.subarray(IV_BYTES, bytes.length - TAG_BYTES)), gcm.final()]).toString('utf8')
      } catch (cause) {
        throw new OutcomeUnreadableError('The stored outcome fails authentication: it was changed, truncated, or written for another key', { cause })
      }
    },
  }
}

// The base64's groups of four are checked as a length: a repeated group, `(?:[…]{4})*`,
// takes the regex engine's stack once per group and overflows it on an outcome of some 12 MB.
const ENVELOPE = /^"idem:enc:v1:([A-Za-z0-9._-]{1,64}):([A-Za-z0-9+/]*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?)"$/

function envelopeOf(stored: string): { keyId: string; data: string } | undefined {
  if (typeof stored !== 'string') return undefined
  const match = ENVELOPE.exec(stored)
  return match === null || match[2]!.length % 4 !== 0 ? undefined : { keyId: match[1]!, data: match[2]! }
}
