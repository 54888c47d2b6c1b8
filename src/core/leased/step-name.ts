import { InvalidOptionError } from '../errors/invalid-option.js'
import { assertIdentity } from '../identity.js'

/** The longest step name accepted, in characters. */
export const MAX_STEP_NAME_LENGTH = 1024

/** Checks a step name: 1–1024 characters without NUL, well-formed UTF-16 (it is stored and hashed into `derive`). */
export function assertStepName(name: unknown): asserts name is string {
  assertIdentity('step: the step name', name, MAX_STEP_NAME_LENGTH, InvalidOptionError)
}
