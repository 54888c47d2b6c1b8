import { InvalidOptionError } from '../errors/invalid-option.js'

/** The longest step name accepted, in characters. */
export const MAX_STEP_NAME_LENGTH = 1024

/** Checks a step name: 1–1024 characters without NUL. */
export function assertStepName(name: unknown): asserts name is string {
  if (typeof name !== 'string' || name.length === 0 || name.length > MAX_STEP_NAME_LENGTH || name.includes('\0')) {
    throw new InvalidOptionError(`step: the name must be a string of 1–${MAX_STEP_NAME_LENGTH} characters without NUL`)
  }
}
