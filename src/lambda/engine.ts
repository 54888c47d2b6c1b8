import { createIdem, type EngineSettings, type OutcomeEvent, type RunResult } from '../core/engine.js'
import { InvalidOptionError } from '../core/errors/invalid-option.js'
import type { EventStream } from '../core/events.js'
import type { CallOptions, CHECKED_RUN, CheckedRun } from '../core/call.js'
import { createLeasedIdem } from '../core/leased/engine.js'
import type { LeasedStore } from '../ports/leased-store.js'
import type { StepContext } from '../core/leased/steps.js'
import { MIN_MAX_OUTCOME_BYTES } from '../ports/key-store.js'
import type { Discarded } from '../core/result.js'
import type { KeyStore } from '../ports/key-store.js'

/**
 * What the Lambda front ends need of an engine: its `run`, which both engines have. With
 * the transactional engine (`createIdem`, e.g. on Postgres) `Tx` is the open
 * transaction; with the leased engine (`createLeasedIdem`, e.g. on DynamoDB or Redis) it
 * is the step context (`step`, `derive`, `signal`, `fencingToken`).
 */
export interface LambdaEngine<Tx> {
  /** Runs `fn` at most once per `(scope, key)` and returns its stored outcome (see `Idem.run`, `LeasedIdem.run`). */
  run<T>(options: CallOptions, fn: (tx: Tx) => T | Discarded<T> | Promise<T | Discarded<T>>): Promise<RunResult<T>>
  /** What the engine was given explicitly; the front end keeps it where it sets nothing itself. */
  readonly settings?: EngineSettings
  /** Where the engine keeps outcomes. */
  readonly store: { readonly name: string; readonly maxOutcomeBytes: number }
  /** The checked run the HTTP front end calls (both engines have it: see `CheckedRun`). Internal to idem's front ends. @internal */
  readonly [CHECKED_RUN]: CheckedRun<Tx>
}

/**
 * A store a Lambda front end makes its engine on: a key store (`postgresStore`, `mysqlStore`,
 * `sqliteStore`, `memoryStore`: the handler gets the open transaction) or a leased store
 * (`dynamodbStore`, `redisStore`, `leasedPostgresStore`: the handler gets the step
 * context, so its `Tx` is `StepContext`).
 */
export type StoreOf<Tx> = KeyStore<Tx> | (StepContext extends Tx ? LeasedStore : never)

/** The engine a front end was given (`idem`), or one made on `store`: `createIdem` for a key store, `createLeasedIdem` for a leased one. */
export function engineOf<Tx>(
  caller: string,
  store: StoreOf<Tx> | undefined,
  idem: LambdaEngine<Tx> | undefined,
  onOutcome: ((event: OutcomeEvent) => void) | undefined,
  events: EventStream | undefined,
): LambdaEngine<Tx> {
  const fail = (option: string, why: string): never => {
    throw new InvalidOptionError(`${caller}: option "${option}" ${why}`)
  }
  if (store !== undefined && idem !== undefined) fail('store', 'and "idem" are exclusive: pass the store, or an engine built on it')
  if (idem !== undefined) {
    if (idem === null || typeof idem !== 'object' || typeof idem.run !== 'function') fail('idem', 'must be an engine from createIdem(...) or createLeasedIdem(...)')
    if (onOutcome !== undefined) fail('onOutcome', 'goes to the engine (createIdem / createLeasedIdem) when you pass one ("idem")')
    if (events !== undefined) fail('events', 'goes to the engine (createIdem / createLeasedIdem) when you pass one ("idem")')
    const max = (idem.store as Partial<LambdaEngine<Tx>['store']> | null | undefined)?.maxOutcomeBytes
    if (typeof max !== 'number' || !Number.isSafeInteger(max) || max < MIN_MAX_OUTCOME_BYTES) {
      fail('idem', "must be an engine whose store declares the largest outcome it holds (its store's maxOutcomeBytes), as createIdem(...) and createLeasedIdem(...) make")
    }
    return idem
  }
  if (store === undefined || store === null || typeof store !== 'object') {
    return fail('store', 'is required (a store such as postgresStore(...) or dynamodbStore(...), or "idem", an engine)')
  }
  try {
    if ('begin' in store && typeof store.begin === 'function') return createIdem({ store, onOutcome, events })
    if ('claim' in store && typeof store.claim === 'function') {
      // The handler's `Tx` is then the step context, which the caller's types say (see `StoreOf`).
      return createLeasedIdem({ store, onOutcome, events }) as unknown as LambdaEngine<Tx>
    }
  } catch (cause) {
    if (cause instanceof InvalidOptionError) fail('store', `is invalid: ${cause.message}`)
    throw cause
  }
  return fail('store', 'must be a key store (a KeyStore, with begin()) or a leased store (a LeasedStore, with claim())')
}
