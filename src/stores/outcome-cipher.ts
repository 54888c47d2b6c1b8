/**
 * The cipher of `encryptedStore` (`encrypted.ts`): AES-256-GCM over an outcome or a step
 * result, authenticated with the scope, the key (and the step's name) it belongs to, in
 * a JSON-string envelope that names the key id it was sealed with.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'
import { InvalidOptionError } from '../core/errors/invalid-option.js'
import { OutcomeUnreadableError } from '../core/errors/outcome-unreadable.js'
import type { KeyRecord } from '../ports/key-store.js'
import { assertKnownOptions, optionNames } from '../core/errors/option-checks.js'

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

export interface OutcomeCipher {
  seal(text: string, ...context: string[]): string
  open(stored: string, ...context: string[]): string
  /** The largest text (UTF-8 bytes) whose sealed form is at most `sealedBytes`: what the wrapped store holds of `maxOutcomeBytes`. */
  capacity(sealedBytes: number): number
}

/** Outcomes and step results sealed to their key: the one place every port method seals and opens them. */
export interface RecordCipher {
  sealOutcome(outcome: string, scope: string, key: string): string
  /** The read path of every stored record: `begin`'s found, `claim`'s completed, `peek`'s completed. */
  openRecord(record: KeyRecord, scope: string, key: string): KeyRecord
  sealStep(result: string, scope: string, key: string, name: string): string
  openSteps(steps: ReadonlyMap<string, string>, scope: string, key: string): ReadonlyMap<string, string>
  /** The largest outcome (UTF-8 bytes) whose sealed form the wrapped store holds, of its `maxOutcomeBytes`. */
  capacity(sealedBytes: number): number
}

export function recordCipher(cipher: OutcomeCipher): RecordCipher {
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

/** The keys option, checked: each id to its 32 bytes. */
function keysById(keys: EncryptionOptions['keys']): Map<string, Buffer> {
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
  return byId
}

const OPTIONS = optionNames<EncryptionOptions>({ keys: true, current: true, acceptPlaintext: true })

/**
 * The AES-256-GCM cipher of `options`, checked: seals with the current key, opens with the
 * key id a row names.
 * @throws InvalidOptionError naming the option
 */
export function outcomeCipher(options: EncryptionOptions): OutcomeCipher {
  assertKnownOptions('encryptedStore', options, OPTIONS)
  const { keys, current, acceptPlaintext = false } = options
  const byId = keysById(keys)
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
