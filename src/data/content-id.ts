import { createHash } from 'node:crypto'
import { InvalidOptionError } from '../core/errors/invalid-option.js'

/** What a content id may be built from. Each type is tagged, so `'1'`, `1` and `1n` differ. */
export type ContentIdPart = string | number | bigint | Uint8Array

/** Derives a deterministic id from ordered parts. */
export interface ContentIdFunction {
  /**
   * The SHA-256 of the encoded parts, as 64 lowercase hex digits.
   * @example contentId('claim', 42, 'chunk', 3, 'embed=v4') // → '79edbb226113efd1…cf7e6d7' (always the same)
   */
  (...parts: ContentIdPart[]): string
  /**
   * The same digest as an RFC 9562 version 8 UUID (lowercase, hyphenated): the first
   * 128 bits with the version and variant bits set, 122 bits of the hash left. Vector
   * stores such as Qdrant accept it as a point id.
   * @example contentId.uuid('claim', 42, 'chunk', 3, 'embed=v4') // → '79edbb22-6113-8fd1-8785-835c50f6a5fe'
   */
  uuid(...parts: ContentIdPart[]): string
  /** The raw 32-byte digest, for binary id columns (`bytea`, `BLOB`). */
  bytes(...parts: ContentIdPart[]): Uint8Array
}

// Part of every hash, so ids from this encoding never equal a hash of anything else;
// bumped if the encoding ever changes.
const DOMAIN = 'idem-content-id-v1'

// One ASCII byte per part type. Tagging is what makes 1 ≠ 1n ≠ '1'.
const TAG = { string: 0x73 /* s */, number: 0x6e /* n */, bigint: 0x69 /* i */, bytes: 0x62 /* b */ } as const

// A lone surrogate has no UTF-8 form: encoding would replace it with U+FFFD, so two
// different strings would share an id. Refusing it keeps the id injective.
const LONE_SURROGATE = /\p{Surrogate}/u

/**
 * Encodes and hashes the parts. Each part is written as a one-byte type tag, its byte
 * length as an unsigned 64-bit big-endian integer, then its bytes; a sequence of such
 * self-delimiting parts can be read back in only one way, so `('a|b', 'c')` and
 * `('a', 'b|c')` differ. Part bytes:
 * - string: UTF-8 (lone surrogates are refused);
 * - number: IEEE 754 binary64, big-endian. Only finite numbers; `-0` is written as
 *   `0`, because ids are built from values that JSON, SQL and `String()` already
 *   treat as equal, and a sign bit nobody can see should not change a row's id;
 * - bigint: its decimal text (`-12`);
 * - Uint8Array (and Buffer): the bytes as they are.
 */
function digest(parts: readonly ContentIdPart[], caller: string): Buffer {
  if (parts.length === 0) {
    throw new InvalidOptionError(`${caller}: pass at least one part (e.g. ${caller}('doc', docId, 'chunk', n))`)
  }
  const hash = createHash('sha256')
  writePart(hash, TAG.string, Buffer.from(DOMAIN, 'utf8'))
  parts.forEach((part, index) => writePart(hash, ...encode(part, index, caller)))
  return hash.digest()
}

function encode(part: ContentIdPart, index: number, caller: string): [number, Uint8Array] {
  switch (typeof part) {
    case 'string':
      if (LONE_SURROGATE.test(part)) {
        throw new InvalidOptionError(`${caller}: part ${index} is a string with a lone UTF-16 surrogate, which has no UTF-8 form`)
      }
      return [TAG.string, Buffer.from(part, 'utf8')]
    case 'number': {
      if (!Number.isFinite(part)) throw new InvalidOptionError(`${caller}: part ${index} must be a finite number, got ${part}`)
      const bytes = Buffer.alloc(8)
      bytes.writeDoubleBE(part === 0 ? 0 : part) // normalises -0
      return [TAG.number, bytes]
    }
    case 'bigint':
      return [TAG.bigint, Buffer.from(part.toString(10), 'ascii')]
    default:
      if (part instanceof Uint8Array) return [TAG.bytes, part]
      throw new InvalidOptionError(`${caller}: part ${index} must be a string, number, bigint or Uint8Array, got ${kindOf(part)}`)
  }
}

// What a refused part is, by its class when it has one (a Map, a Float32Array, a Date):
// the parts are typed, never serialised, so nothing else is taken for what it looks like.
function kindOf(part: unknown): string {
  if (part === null || typeof part !== 'object') return part === null ? 'null' : typeof part
  if (Array.isArray(part)) return 'an array (spread it into parts)'
  const name: unknown = (part as { constructor?: { name?: unknown } }).constructor?.name
  return typeof name === 'string' && name !== 'Object' && name.length > 0 ? `an instance of ${name}` : 'a plain object'
}

function writePart(hash: ReturnType<typeof createHash>, tag: number, bytes: Uint8Array): void {
  const header = Buffer.alloc(9)
  header[0] = tag
  header.writeBigUInt64BE(BigInt(bytes.byteLength), 1)
  hash.update(header)
  hash.update(bytes)
}

/**
 * Formats the first 16 bytes of a digest as a version 8 UUID, as RFC 9562 appendix B.2
 * does for name-based SHA-256 ids: version nibble `8`, variant bits `10`.
 */
function toUuid(digestBytes: Buffer): string {
  const b = Buffer.from(digestBytes.subarray(0, 16))
  b[6] = (b[6]! & 0x0f) | 0x80
  b[8] = (b[8]! & 0x3f) | 0x80
  const hex = b.toString('hex')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}

/**
 * A deterministic id from ordered, typed parts: the same parts give the same id in
 * every process and every run, so a replayed write lands on the same row (upsert by
 * it) instead of adding a second. Unlike `sha256(a + '|' + b)`, the encoding is
 * unambiguous: `('a|b', 'c')`, `('a', 'b|c')`, `('1')`, `(1)` and `(1n)` all differ.
 *
 * `contentId(...)` is the hex digest; `contentId.uuid(...)` the same digest as a
 * version 8 UUID; `contentId.bytes(...)` the raw 32 bytes.
 *
 * Numbers must be finite; `-0` and `0` give the same id. Put a version in the parts
 * (`'embed=v4'`) so that changing a model or prompt makes new rows rather than
 * overwriting old ones.
 *
 * @throws InvalidOptionError for no parts, a non-finite number, a lone surrogate or an unsupported type
 * @example
 * const id = contentId.uuid('claim', claimId, 'chunk', n, 'embed=v4')
 * await upsert(postgresDialect, client, { table: 'chunks', key: 'id', columns: ['text', 'embedding'] }, { id, text, embedding })
 * @see docs/data.md
 */
export const contentId: ContentIdFunction = Object.assign(
  function contentId(...parts: ContentIdPart[]): string {
    return digest(parts, 'contentId').toString('hex')
  },
  {
    uuid(...parts: ContentIdPart[]): string {
      return toUuid(digest(parts, 'contentId.uuid'))
    },
    bytes(...parts: ContentIdPart[]): Uint8Array {
      return new Uint8Array(digest(parts, 'contentId.bytes'))
    },
  },
)
