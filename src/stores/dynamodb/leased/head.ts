import { GetItemCommand } from '@aws-sdk/client-dynamodb'
import { BOOL, HEAD_SK, N, S, bool, num, str, ttlOf, type Item } from '../items.js'
import type { LeasedContext } from './context.js'

/** The key of a leased key's claim item (`sk = '#'`) under its partition `pk`. */
export const headKey = (pk: string): Item => ({ pk: S(pk), sk: S(HEAD_SK) })

/** Who claims a key, and until when: what one claim attempt writes on each of its puts. */
export interface Claimant {
  readonly pk: string
  readonly scope: string
  readonly key: string
  readonly fingerprint: string
  readonly leaseUntil: number
  readonly expiresAt: number
}

/** What each put of a claim decides: the fencing token, the lifetime's first token, the version, whether steps are kept. */
export interface Fencing {
  readonly token: number
  readonly gen: number
  readonly ver: number
  readonly steps: boolean
}

/** The claim item a claim puts: the key held by `claimant` under `fencing`. */
export function headItem(claimant: Claimant, fencing: Fencing): Item {
  return {
    ...headKey(claimant.pk),
    scope: S(claimant.scope),
    key: S(claimant.key),
    state: S('held'),
    fp: S(claimant.fingerprint),
    token: N(fencing.token),
    gen: N(fencing.gen),
    ver: N(fencing.ver),
    leaseUntil: N(claimant.leaseUntil),
    expiresAt: N(claimant.expiresAt),
    ttl: ttlOf(claimant.expiresAt),
    steps: BOOL(fencing.steps),
  }
}

/**
 * A claim item read back (or the attributes a write returned of it), typed. Each field
 * reads its attribute when asked, so a completion that wants one pays for one; an
 * attribute that is missing reads as the value after `??`.
 */
export class Head {
  constructor(readonly item: Item) {}

  /** `held`, `free` or `completed`. */
  get state(): string | undefined {
    return str(this.item, 'state')
  }

  /** The holder's fingerprint, or the completed record's. */
  get fingerprint(): string {
    return str(this.item, 'fp') ?? ''
  }

  /** The latest claim's fencing token. */
  get token(): number | undefined {
    return num(this.item, 'token')
  }

  /** The lifetime's first token: steps saved with an older one belong to an earlier lifetime. */
  get gen(): number | undefined {
    return num(this.item, 'gen')
  }

  /** The version every write bumps; a claim of a key that is there puts on the one it read. */
  get ver(): number {
    return num(this.item, 'ver') ?? 0
  }

  /** When the lease ends (ms); a free or completed key has none (0). */
  get leaseUntil(): number {
    return num(this.item, 'leaseUntil') ?? 0
  }

  /** When the key expires (ms): the read side's check, since DynamoDB's TTL deletes only eventually. */
  get expiresAt(): number {
    return num(this.item, 'expiresAt') ?? 0
  }

  /** Whether a holder saved steps (kept for a holder that resumes). */
  get steps(): boolean {
    return bool(this.item, 'steps')
  }

  /** A completed key's outcome, or its first part. */
  get outcome(): string {
    return str(this.item, 'outcome') ?? ''
  }

  /** How many parts the outcome has (the first is `outcome`). */
  get outcomeParts(): number {
    return num(this.item, 'outcomeParts') ?? 1
  }
}

/** The key's claim item, read consistently for `operation` (a claim's, by default); undefined when there is none. */
export async function readHead(context: LeasedContext, pk: string, operation = 'claim'): Promise<Head | undefined> {
  const { Item } = await context.wire.send<{ Item?: Item }>(operation, new GetItemCommand({ TableName: context.TableName, Key: headKey(pk), ConsistentRead: true }))
  return Item === undefined ? undefined : new Head(Item)
}
