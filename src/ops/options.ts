import { InvalidOptionError } from '../core/errors/invalid-option.js'
import { idemEvents, type EventStream } from '../core/events.js'
import { assertKnownOptions, assertName, shown, type KnownOptions } from '../core/errors/option-checks.js'
import type { RecorderOptions } from './recorder.js'

/** What both exporters accept: the stream they subscribe to and the names to start series for. */
export interface ExporterOptions extends RecorderOptions {
  /** The stream to subscribe to. @default the process-wide `idemEvents` */
  events?: EventStream
}

/**
 * Checks the options both exporters share, naming the one that is wrong.
 * @param known every option name the exporter takes, these shared ones included
 */
export function checkExporterOptions(caller: string, options: ExporterOptions, known: KnownOptions): EventStream {
  assertKnownOptions(caller, options, known)
  const { events = idemEvents } = options
  if (events === null || typeof events !== 'object' || typeof events.subscribe !== 'function') {
    throw new InvalidOptionError(`${caller}: option "events" must be an event stream (createEventStream()), got ${shown(events)}`)
  }
  for (const name of ['stores', 'consumers'] as const) {
    const list = options[name]
    if (list === undefined) continue
    if (!Array.isArray(list)) throw new InvalidOptionError(`${caller}: option "${name}" must be an array of names, got ${shown(list)}`)
    for (const value of list) assertName(`${caller}: option "${name}"`, value)
  }
  return events
}
