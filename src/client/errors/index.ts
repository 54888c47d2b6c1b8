export { IdemClientError, type ClientErrorDetails } from './client-error.js'
export { ProblemError, type ProblemDetails, type ProblemErrorDetails } from './problem-error.js'
export { RetriesExhaustedError } from './retries-exhausted.js'
export { DeadlineExceededError } from './deadline-exceeded.js'
