import {
  BatchWriteItemCommand,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  UpdateItemCommand,
  type TransactWriteItem,
} from '@aws-sdk/client-dynamodb'
import { StoreUnavailableError } from '../../core/errors/store-unavailable.js'
import type { KeyPeek } from '../../core/dual-read.js'
import type { LeaseClaim, LeasedStore } from '../../core/leased/store.js'
import { MAX_DURATION_MS } from '../../core/validate.js'
import { conditionFailed } from './errors.js'
import { expression, updateExpression } from './expressions.js'
import { BOOL, HEAD_SK, MAX_OUTCOME_BYTES, N, OUTCOME_PART_SK, S, STEP_SK, bool, leasePk, num, partsOf, stepSk, str, ttlOf, type Item } from './items.js'
import { transact } from './transact.js'
import type { Wire } from './wire.js'

// Every write after the claim: held, the caller's token, and not expired (the read-side
// check: DynamoDB deletes expired items only eventually).
const FENCE = '#state = :held AND #token = :token AND #expiresAt > :now'

// A step item's TTL, which only collects garbage: saveStep does not know the claim's
// retention, so it takes the longest one there can be (lease + ttl, each at most
// MAX_DURATION_MS); a claim or renewal that pushes the key's expiry further pushes its
// steps' too. Abandoned steps are thus collected up to ~50 days late, never early.
const STEP_HORIZON_MS = 2 * MAX_DURATION_MS

/**
 * The leased store's half of the DynamoDB store. Per key, under `pk = lease#<hash>`:
 * the claim item (`sk = '#'`: state, fingerprint, token, the lifetime's first token
 * `gen`, a version `ver` every write bumps, lease and expiry in ms, whether steps were
 * saved, the outcome), outcome parts (`#outcome#<i>`) for outcomes past one item, and
 * the steps (`step#<hash of name>`, parts `…#<i>`). A claim is a conditional put: on a
 * new key `attribute_not_exists`, otherwise on the version it read, so two claims of
 * one key never both succeed. Steps are written in a transaction with a fenced update
 * of the claim item, so a replaced holder's step is refused with it.
 *
 * Time is the caller's clock (DynamoDB has none in its expressions): leases are as
 * accurate as the clocks of the processes sharing a table; fencing does not depend on
 * them.
 */
export function dynamoLeasedStore(wire: Wire, now: () => number = Date.now): LeasedStore & KeyPeek {
  const TableName = wire.table
  const headKey = (pk: string): Item => ({ pk: S(pk), sk: S(HEAD_SK) })

  function headItem(
    pk: string,
    scope: string,
    key: string,
    fingerprint: string,
    fields: { token: number; gen: number; ver: number; leaseUntil: number; expiresAt: number; steps: boolean },
  ): Item {
    return {
      ...headKey(pk),
      scope: S(scope),
      key: S(key),
      state: S('held'),
      fp: S(fingerprint),
      token: N(fields.token),
      gen: N(fields.gen),
      ver: N(fields.ver),
      leaseUntil: N(fields.leaseUntil),
      expiresAt: N(fields.expiresAt),
      ttl: ttlOf(fields.expiresAt),
      steps: BOOL(fields.steps),
    }
  }

  /** A conditional put of the claim item; undefined when the condition failed, with what was there. */
  async function put(item: Item, condition: string, values: Record<string, ReturnType<typeof N>>, late: () => void): Promise<{ old?: Item } | undefined> {
    try {
      await wire.send(
        'claim',
        new PutItemCommand({ TableName, Item: item, ReturnValuesOnConditionCheckFailure: 'ALL_OLD', ...expression({ condition }, values) }),
        late,
      )
      return undefined
    } catch (error) {
      if (!conditionFailed(error)) throw error
      return { old: (error as { Item?: Item }).Item }
    }
  }

  async function readHead(pk: string): Promise<Item | undefined> {
    const { Item } = await wire.send<{ Item?: Item }>('claim', new GetItemCommand({ TableName, Key: headKey(pk), ConsistentRead: true }))
    return Item
  }

  /** Every item under `pk` whose sort key starts with `prefix`, read consistently. */
  async function query(operation: string, pk: string, prefix: string): Promise<Item[]> {
    const items: Item[] = []
    let start: Item | undefined
    do {
      const page = await wire.send<{ Items?: Item[]; LastEvaluatedKey?: Item }>(
        operation,
        new QueryCommand({
          TableName,
          ConsistentRead: true,
          ExclusiveStartKey: start,
          ...expression({ keyCondition: '#pk = :pk AND begins_with(#sk, :prefix)' }, { ':pk': S(pk), ':prefix': S(prefix) }),
        }),
      )
      items.push(...(page.Items ?? []))
      start = page.LastEvaluatedKey
    } while (start !== undefined)
    return items
  }

  /** The steps of the current lifetime (saved with a token ≥ `gen`), parts joined; their TTL pushed to `expiresAt` where shorter. */
  async function readSteps(pk: string, gen: number, expiresAt: number): Promise<Map<string, string>> {
    const items = await query('claim', pk, STEP_SK)
    const bySk = new Map(items.map((item) => [str(item, 'sk')!, item]))
    const steps = new Map<string, string>()
    const short: Item[] = []
    for (const item of items) {
      const name = str(item, 'name')
      const token = num(item, 'token') ?? 0
      if (name === undefined || token < gen) continue
      let result = str(item, 'result') ?? ''
      const sk = str(item, 'sk')!
      for (let i = 1; i < (num(item, 'parts') ?? 1); i++) {
        const part = bySk.get(`${sk}#${i}`)
        if (part === undefined || num(part, 'token') !== token) throw new Error(`idem: step ${JSON.stringify(name)} is missing part ${i}`)
        result += str(part, 'data') ?? ''
        if ((num(part, 'ttl') ?? 0) * 1000 < expiresAt) short.push(part)
      }
      if ((num(item, 'ttl') ?? 0) * 1000 < expiresAt) short.push(item)
      steps.set(name, result)
    }
    await extendTtl(short, expiresAt)
    return steps
  }

  async function extendTtl(items: Item[], expiresAt: number): Promise<void> {
    await Promise.all(
      items.map((item) =>
        wire
          .send(
            'claim',
            new UpdateItemCommand({
              TableName,
              Key: { pk: item.pk!, sk: item.sk! },
              ...expression({ condition: 'attribute_exists(#pk)', update: 'SET #ttl = :ttl' }, { ':ttl': ttlOf(expiresAt) }),
            }),
          )
          .catch((error: unknown) => {
            if (!conditionFailed(error)) throw error
          }),
      ),
    )
  }

  async function readOutcome(pk: string, head: Item): Promise<string> {
    const parts = num(head, 'outcomeParts') ?? 1
    let outcome = str(head, 'outcome') ?? ''
    if (parts <= 1) return outcome
    const token = num(head, 'token')
    const found = new Map((await query('claim', pk, OUTCOME_PART_SK)).map((item) => [str(item, 'sk')!, item]))
    for (let i = 1; i < parts; i++) {
      const part = found.get(`${OUTCOME_PART_SK}${i}`)
      if (part === undefined || num(part, 'token') !== token) throw new Error(`idem: the outcome is missing part ${i}`)
      outcome += str(part, 'data') ?? ''
    }
    return outcome
  }

  /** Deletes a completed key's steps. Best effort: they are never read again (a new lifetime ignores them) and their TTL collects them. */
  async function dropSteps(pk: string): Promise<void> {
    const items = await query('complete', pk, STEP_SK)
    for (let i = 0; i < items.length; i += 25) {
      const batch = items.slice(i, i + 25).map((item) => ({ DeleteRequest: { Key: { pk: item.pk!, sk: item.sk! } } }))
      await wire.send('complete', new BatchWriteItemCommand({ RequestItems: { [TableName]: batch } }))
    }
  }

  const fenceValues = (token: number, t: number) => ({ ':held': S('held'), ':token': N(token), ':now': N(t) })

  /** A fenced UpdateItem; false when the fence did not hold. */
  async function fenced(operation: string, pk: string, token: number, update: string, values: Item = {}, returnValues?: 'ALL_NEW' | 'ALL_OLD'): Promise<Item | false> {
    const t = now()
    try {
      const output = await wire.send<{ Attributes?: Item }>(
        operation,
        new UpdateItemCommand({
          TableName,
          Key: headKey(pk),
          ReturnValues: returnValues ?? 'NONE',
          ...expression({ condition: FENCE, update }, { ...fenceValues(token, t), ':one': N(1), ...values }),
        }),
      )
      return output.Attributes ?? {}
    } catch (error) {
      if (conditionFailed(error)) return false
      throw error
    }
  }

  function valueItems(pk: string, sk: string, token: number, parts: string[], ttl: number): TransactWriteItem[] {
    return parts.slice(1).map((data, i) => ({
      Put: { TableName, Item: { pk: S(pk), sk: S(`${sk}${sk.endsWith('#') ? '' : '#'}${i + 1}`), token: N(token), data: S(data), ttl: ttlOf(ttl) } },
    }))
  }

  const store: LeasedStore & KeyPeek = {
    name: 'dynamodb',
    maxOutcomeBytes: MAX_OUTCOME_BYTES,

    async peek(scope, key) {
      const pk = leasePk(scope, key)
      const head = await readHead(pk)
      const t = now()
      if (head === undefined || (num(head, 'expiresAt') ?? 0) <= t) return { state: 'absent' }
      if (str(head, 'state') === 'completed') return { state: 'completed', record: { fingerprint: str(head, 'fp') ?? '', outcome: await readOutcome(pk, head) } }
      if ((str(head, 'state') === 'held' && (num(head, 'leaseUntil') ?? 0) > t) || bool(head, 'steps')) return { state: 'held' }
      return { state: 'absent' }
    },

    async claim(scope, key, fingerprint, leaseMs, ttlMs) {
      const pk = leasePk(scope, key)
      for (let attempt = 0; attempt < 50; attempt++) {
        const t = now()
        const leaseUntil = t + leaseMs
        const expiresAt = t + leaseMs + ttlMs
        const clock = t * 1000
        // The caller gave up on this claim (timeoutMs), so nobody will run under it: hand it back.
        const lateRelease = (token: number) => () => void store.release(scope, key, token).catch(() => {})

        let old = await put(
          headItem(pk, scope, key, fingerprint, { token: clock, gen: clock, ver: 1, leaseUntil, expiresAt, steps: false }),
          'attribute_not_exists(#pk)',
          {},
          lateRelease(clock),
        )
        if (old === undefined) return { state: 'acquired', token: clock, steps: new Map() }
        const head = old.old ?? (await readHead(pk))
        if (head === undefined) continue // deleted meanwhile: claim afresh
        const state = str(head, 'state')
        const ver = num(head, 'ver') ?? 0
        const previous = num(head, 'token') ?? 0
        const token = Math.max(previous + 1, clock)
        const onVersion = { ':ver': N(ver) }

        if ((num(head, 'expiresAt') ?? 0) <= t) {
          // An expired key is a new key: a new lifetime starts at this token, and steps
          // and outcome parts of the old one (older tokens) are ignored from now on.
          old = await put(
            headItem(pk, scope, key, fingerprint, { token, gen: token, ver: ver + 1, leaseUntil, expiresAt, steps: false }),
            '#ver = :ver',
            onVersion,
            lateRelease(token),
          )
          if (old === undefined) return { state: 'acquired', token, steps: new Map() }
          continue
        }
        const holder = str(head, 'fp') ?? ''
        if (state === 'completed') return { state: 'completed', record: { fingerprint: holder, outcome: await readOutcome(pk, head) } }
        if (state === 'held' && (num(head, 'leaseUntil') ?? 0) > t) return { state: 'running', fingerprint: holder }
        const resumable = bool(head, 'steps')
        if (resumable && holder !== fingerprint) return { state: 'running', fingerprint: holder }
        const gen = num(head, 'gen') ?? token
        old = await put(
          headItem(pk, scope, key, fingerprint, { token, gen, ver: ver + 1, leaseUntil, expiresAt, steps: resumable }),
          '#ver = :ver',
          onVersion,
          lateRelease(token),
        )
        if (old !== undefined) continue
        // The put bumped the version, so no step of an older holder can land after this read.
        return { state: 'acquired', token, steps: resumable ? await readSteps(pk, gen, expiresAt) : new Map() }
      }
      throw new StoreUnavailableError('DynamoDB: the claim kept losing races for the same key; try again')
    },

    async renew(scope, key, token, leaseMs) {
      const pk = leasePk(scope, key)
      const leaseUntil = now() + leaseMs
      const after = await fenced('renew', pk, token, 'SET #leaseUntil = :leaseUntil, #ver = #ver + :one', { ':leaseUntil': N(leaseUntil) }, 'ALL_NEW')
      if (after === false) return false
      // Rare: a lease that outlives the key's retention pushes it (and its steps') further.
      if ((num(after, 'expiresAt') ?? 0) < leaseUntil) {
        const pushed = await fenced('renew', pk, token, 'SET #expiresAt = :leaseUntil, #ttl = :ttl, #ver = #ver + :one', {
          ':leaseUntil': N(leaseUntil),
          ':ttl': ttlOf(leaseUntil),
        })
        if (pushed === false) return false
        if (bool(after, 'steps')) await readSteps(pk, num(after, 'gen') ?? 0, leaseUntil)
      }
      return true
    },

    async saveStep(scope, key, token, name, result) {
      const pk = leasePk(scope, key)
      const t = now()
      const sk = stepSk(name)
      const parts = partsOf(result)
      const ttl = t + STEP_HORIZON_MS
      const outcome = await transact(wire, 'saveStep', [
        {
          Update: {
            TableName,
            Key: headKey(pk),
            ...updateExpression({ condition: FENCE, update: 'SET #steps = :true, #ver = #ver + :one' }, { ...fenceValues(token, t), ':true': BOOL(true), ':one': N(1) }),
          },
        },
        {
          Put: {
            TableName,
            Item: { pk: S(pk), sk: S(sk), name: S(name), result: S(parts[0]!), parts: N(parts.length), token: N(token), ttl: ttlOf(ttl) },
          },
        },
        ...valueItems(pk, sk, token, parts, ttl),
      ])
      if (outcome.committed) return true
      if (outcome.codes[0] === 'ConditionalCheckFailed') return false
      throw new StoreUnavailableError(`DynamoDB cancelled saveStep (${outcome.codes.join(', ')})`)
    },

    async complete(scope, key, token, outcome, ttlMs) {
      const pk = leasePk(scope, key)
      const t = now()
      const expiresAt = t + ttlMs
      const parts = partsOf(outcome)
      const update = 'SET #state = :completed, #outcome = :outcome, #outcomeParts = :parts, #expiresAt = :expiresAt, #ttl = :ttl, #ver = #ver + :one REMOVE #leaseUntil'
      const values = { ':completed': S('completed'), ':outcome': S(parts[0]!), ':parts': N(parts.length), ':expiresAt': N(expiresAt), ':ttl': ttlOf(expiresAt) }
      let hadSteps: boolean
      if (parts.length === 1) {
        const before = await fenced('complete', pk, token, update, values, 'ALL_OLD')
        if (before === false) return false
        hadSteps = bool(before, 'steps')
      } else {
        const result = await transact(wire, 'complete', [
          { Update: { TableName, Key: headKey(pk), ...updateExpression({ condition: FENCE, update }, { ...fenceValues(token, t), ':one': N(1), ...values }) } },
          ...valueItems(pk, OUTCOME_PART_SK, token, parts, expiresAt),
        ])
        if (!result.committed) {
          if (result.codes[0] === 'ConditionalCheckFailed') return false
          throw new StoreUnavailableError(`DynamoDB cancelled complete (${result.codes.join(', ')})`)
        }
        hadSteps = true
      }
      // Off the caller's path: the outcome is stored, the steps are garbage.
      if (hadSteps) dropSteps(pk).catch(() => {})
      return true
    },

    async release(scope, key, token) {
      return (await fenced('release', leasePk(scope, key), token, 'SET #state = :free, #ver = #ver + :one REMOVE #leaseUntil', { ':free': S('free') })) !== false
    },
  }
  return store
}
