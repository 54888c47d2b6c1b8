import { InvalidOptionError } from './errors/invalid-option.js'

/**
 * Where the failures an operator must hear of are written, one line each, by default:
 * a store that is down, a dead letter, a lost lease, a refused webhook. Every event
 * stream has a logger (JSON lines on stderr unless told otherwise); the failing part
 * hands it one `FailureLine` through `events.fail(event, line)`, so nothing is built or
 * written on the paths that did not fail.
 */

/**
 * A logger idem can write to: pino's (`logger.warn(fields, message)`) and the console
 * fit as they are. Fields are the line's facts (`event`, `code`, the consumer, the
 * store…), never a body, a secret or a stored outcome.
 */
export interface IdemLogger {
  /** A failure that idem answered for (a refused delivery, a lost lease). */
  warn(fields: LogFields, message: string): void
  /** A failure that needs someone (the store down, a dead letter). */
  error(fields: LogFields, message: string): void
}

/** The facts of one line: plain values, so that any logger prints them as they are. */
export type LogFields = Readonly<Record<string, string | number | boolean | undefined>>

/** One failure's line: its level, its stable `code`, what it says and its facts. */
export interface FailureLine {
  readonly level: 'warn' | 'error'
  readonly code: string
  readonly message: string
  readonly fields?: LogFields
}

/**
 * The default logger: each line one JSON object on stderr (`console.warn` or
 * `console.error`), `{"level":"warn","event":"lease","code":"lease-lost",…,"msg":"idem: …"}`,
 * which log collectors read as they are.
 */
export const jsonConsoleLogger: IdemLogger = {
  warn: (fields, message) => console.warn(JSON.stringify({ level: 'warn', ...fields, msg: message })),
  error: (fields, message) => console.error(JSON.stringify({ level: 'error', ...fields, msg: message })),
}

/**
 * The logger an option names: `false` silences, an object with `warn` and `error` is
 * used as it is, nothing means the JSON console logger.
 * @throws InvalidOptionError naming what `logger` must be
 */
export function loggerOf(caller: string, logger: IdemLogger | false | undefined): IdemLogger | undefined {
  if (logger === undefined) return jsonConsoleLogger
  if (logger === false) return undefined
  if (logger === null || typeof logger !== 'object' || typeof logger.warn !== 'function' || typeof logger.error !== 'function') {
    throw new InvalidOptionError(`${caller}: option "logger" must be false or an object with warn(fields, message) and error(fields, message) (pino's logger or console), got ${typeof logger}`)
  }
  return logger
}

/** Writes `line` to `logger` as `event`'s; a logger that throws is ignored, as a listener is. */
export function writeLine(logger: IdemLogger, event: string, line: FailureLine): void {
  try {
    logger[line.level]({ event, code: line.code, ...line.fields }, line.message)
  } catch {
    // ignored on purpose: reporting never changes an outcome
  }
}

/** What an error says, for a line's fields (an Error's message, else its text). */
export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
