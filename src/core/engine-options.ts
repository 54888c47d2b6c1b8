import { InvalidOptionError } from './errors/invalid-option.js'
import type { EventStream, OutcomeEvent } from './events.js'
import { assertDuration } from './errors/option-checks.js'

/** 24 hours: how long HTTP keys are kept by default (DESIGN "Retention"). */
export const DEFAULT_TTL_MS = 24 * 60 * 60 * 1000
/** How long a duplicate waits for the first call by default, on direct engine calls, before `InFlightError`. */
export const DEFAULT_WAIT_MS = 5_000

/**
 * 5 minutes: how long a direct engine call or an inbox handler may hold its key by
 * default. Long enough for any work that belongs in one call (a slow batch of writes, an
 * LLM step), short enough that a call that never settles frees its key within minutes
 * rather than at the next restart. The HTTP middleware has a shorter default of its own.
 */
export const DEFAULT_DEADLINE_MS = 5 * 60 * 1000

/** The settings an engine was given explicitly: a front end it is passed to keeps them, and applies its own defaults only to the rest. */
export interface EngineSettings {
  readonly ttlMs?: number
  readonly waitMs?: number
  readonly deadlineMs?: number
}

/** An engine's defaults for what a call may set itself (see `CallOptions`): checked once, at creation. */
export interface CallDefaults {
  readonly ttlMs: number
  readonly waitMs: number
  readonly deadlineMs: number
}

/**
 * Checks the defaults both engines take for their calls' retention, wait and deadline.
 * @param engine the factory to name in the error, e.g. `createIdem`
 * @throws InvalidOptionError naming the option
 */
export function assertCallDefaults(engine: string, { ttlMs, waitMs, deadlineMs }: CallDefaults): void {
  assertDuration(`${engine}: option "ttlMs"`, ttlMs, 1)
  assertDuration(`${engine}: option "waitMs"`, waitMs, 0)
  assertDuration(`${engine}: option "deadlineMs"`, deadlineMs, 1)
}

/**
 * Checks where an engine reports its calls: its `onOutcome` hook, if any, and its event stream.
 * @throws InvalidOptionError naming the option
 */
export function assertReporting(engine: string, onOutcome: ((event: OutcomeEvent) => void) | undefined, events: EventStream): void {
  if (onOutcome !== undefined && typeof onOutcome !== 'function') {
    throw new InvalidOptionError(`${engine}: option "onOutcome" must be a function`)
  }
  if (events === null || typeof events !== 'object' || typeof events.emit !== 'function') {
    throw new InvalidOptionError(`${engine}: option "events" must be an event stream (createEventStream())`)
  }
}

/** The call defaults `given` set explicitly, at their checked values (see `EngineSettings`). */
export function explicitSettings(given: { ttlMs?: number; waitMs?: number; deadlineMs?: number }, defaults: CallDefaults): EngineSettings {
  return {
    ...(given.ttlMs === undefined ? {} : { ttlMs: defaults.ttlMs }),
    ...(given.waitMs === undefined ? {} : { waitMs: defaults.waitMs }),
    ...(given.deadlineMs === undefined ? {} : { deadlineMs: defaults.deadlineMs }),
  }
}
