import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'
import { InvalidOptionError } from '../core/errors/invalid-option.js'
import { assertKnownOptions, optionNames } from '../core/validate.js'
import { OutcomeUnreadableError } from '../core/errors/outcome-unreadable.js'
import type { LeaseClaim, LeasedStore } from '../core/leased/store.js'
import type { KeyStore, NewRecord, Session } from '../core/store.js'

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

/**
 * Wraps a store so that the outcomes it keeps (and, for a leased store, the step results)
 * are encrypted at rest with AES-256-GCM. Fingerprints stay as they are (they are
 * hashes); nothing else changes, so the wrapped store is used exactly like the store.
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
 * The store's other ports (the inbox's ids, the outbox's payloads, dead letters) are
 * passed through unencrypted.
 * @example
 * const store = encryptedStore(postgresStore({ pool }), { keys: { k2: process.env.IDEM_KEY_2!, k1: process.env.IDEM_KEY_1! }, current: 'k2' })
 */
export function encryptedStore<S extends KeyStore<unknown> | LeasedStore>(store: S, options: EncryptionOptions): S {
  const cipher = outcomeCipher(options)
  if (store !== null && typeof store === 'object' && typeof (store as KeyStore<unknown>).begin === 'function') {
    return encryptKeyStore(store as KeyStore<unknown>, cipher) as S
  }
  if (store !== null && typeof store === 'object' && typeof (store as LeasedStore).claim === 'function') {
    return encryptLeasedStore(store as LeasedStore, cipher) as S
  }
  throw new InvalidOptionError('encryptedStore: the first argument must be a key store (postgresStore(...)) or a leased store (redisStore(...))')
}

interface OutcomeCipher {
  seal(text: string, ...context: string[]): string
  open(stored: string, ...context: string[]): string
}

function encryptKeyStore<Tx>(store: KeyStore<Tx>, cipher: OutcomeCipher): KeyStore<Tx> {
  return {
    ...store,
    async begin(request) {
      const session = await store.begin(request)
      const { scope, key } = request
      let claim = session.claim
      if (claim.state === 'found') {
        try {
          claim = { state: 'found', record: { fingerprint: claim.record.fingerprint, outcome: cipher.open(claim.record.outcome, 'outcome', scope, key) } }
        } catch (error) {
          await session.rollback()
          throw error
        }
      }
      const sealed: Session<Tx> = {
        tx: session.tx,
        claim,
        joined: session.joined,
        commit: (record: NewRecord) => session.commit({ ...record, outcome: cipher.seal(record.outcome, 'outcome', scope, key) }),
        rollback: () => session.rollback(),
      }
      if (session.lost !== undefined) sealed.lost = () => session.lost!()
      return sealed
    },
  }
}

function encryptLeasedStore(store: LeasedStore, cipher: OutcomeCipher): LeasedStore {
  return {
    ...store,
    async claim(scope, key, fingerprint, leaseMs, ttlMs) {
      const claim: LeaseClaim = await store.claim(scope, key, fingerprint, leaseMs, ttlMs)
      if (claim.state === 'completed') {
        return { state: 'completed', record: { fingerprint: claim.record.fingerprint, outcome: cipher.open(claim.record.outcome, 'outcome', scope, key) } }
      }
      if (claim.state !== 'acquired' || claim.steps.size === 0) return claim
      try {
        const steps = new Map<string, string>()
        for (const [name, result] of claim.steps) steps.set(name, cipher.open(result, 'step', scope, key, name))
        return { state: 'acquired', token: claim.token, steps }
      } catch (error) {
        // The steps stay, bound to the request; the key need not wait out a lease nobody runs.
        await store.release(scope, key, claim.token).catch(() => false)
        throw error
      }
    },
    saveStep: (scope, key, token, name, result) => store.saveStep(scope, key, token, name, cipher.seal(result, 'step', scope, key, name)),
    complete: (scope, key, token, outcome, ttlMs) => store.complete(scope, key, token, cipher.seal(outcome, 'outcome', scope, key), ttlMs),
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

  return {
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

const ENVELOPE = /^"idem:enc:v1:([A-Za-z0-9._-]{1,64}):((?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?)"$/

function envelopeOf(stored: string): { keyId: string; data: string } | undefined {
  if (typeof stored !== 'string') return undefined
  const match = ENVELOPE.exec(stored)
  return match === null ? undefined : { keyId: match[1]!, data: match[2]! }
}
