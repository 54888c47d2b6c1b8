import { InvalidOptionError } from '../core/errors/invalid-option.js'
import type { KeyPeek, PeekResult } from '../ports/key-peek.js'
import type { Lease, LeaseClaim, LeasedStore } from '../ports/leased-store.js'
import type { KeyStore, NewRecord, Session } from '../ports/key-store.js'
import type { WithOnceTable } from '../ports/once-table.js'
import type { WithDeadLetterTable } from '../ports/dead-letter-table.js'
import type { WithInboxTable } from '../ports/inbox-table.js'
import type { WithOutboxTable } from '../ports/outbox-table.js'
import { outcomeCipher, recordCipher, type EncryptionOptions, type RecordCipher } from './outcome-cipher.js'

export type { EncryptionOptions } from './outcome-cipher.js'

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
  const leased = hasMethods<LeasedStore>(store, ['claim'])
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
      if (claim.state !== 'acquired') return claim
      const lease = new SealedLease(claim.lease, cipher, scope, key)
      if (claim.steps.size === 0) return { state: 'acquired', lease, steps: claim.steps }
      try {
        return { state: 'acquired', lease, steps: cipher.openSteps(claim.steps, scope, key) }
      } catch (error) {
        // The steps stay, bound to the request; the key need not wait out a lease nobody runs.
        await claim.lease.release().catch(() => false)
        throw error
      }
    },
  }
}

/** A lease of the wrapped store whose step results and outcome are sealed to their key before they are written. */
class SealedLease implements Lease {
  readonly #lease: Lease
  readonly #cipher: RecordCipher
  readonly #scope: string
  readonly #key: string

  constructor(lease: Lease, cipher: RecordCipher, scope: string, key: string) {
    this.#lease = lease
    this.#cipher = cipher
    this.#scope = scope
    this.#key = key
  }

  renew(leaseMs: number): Promise<boolean> {
    return this.#lease.renew(leaseMs)
  }

  saveStep(name: string, result: string): Promise<boolean> {
    return this.#lease.saveStep(name, this.#cipher.sealStep(result, this.#scope, this.#key, name))
  }

  complete(outcome: string, ttlMs: number): Promise<boolean> {
    return this.#lease.complete(this.#cipher.sealOutcome(outcome, this.#scope, this.#key), ttlMs)
  }

  release(): Promise<boolean> {
    return this.#lease.release()
  }

  fencingToken(): Promise<number | undefined> {
    return this.#lease.fencingToken()
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

