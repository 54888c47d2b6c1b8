import { IdemError } from '../errors/idem-error.js'
import { StoreUnavailableError } from '../errors/store-unavailable.js'

/**
 * What the leased engine throws when a store call fails: the store's own typed error
 * (`StoreUnavailableError`, `MigrationRequiredError`) as it is, and anything else as a
 * `StoreUnavailableError`, so a front end answers an unexpected failure as the store
 * being unavailable (retry later), never by running the function unprotected.
 */
export function storeFailure(storeName: string, error: unknown): IdemError {
  if (error instanceof IdemError) return error
  const message = error instanceof Error ? error.message : String(error)
  return new StoreUnavailableError(`The ${storeName} leased store failed: ${message}`, { cause: error })
}
