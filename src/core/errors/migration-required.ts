import { IdemError } from './idem-error.js'

/** The key store has not been migrated (its tables or functions are missing). */
export class MigrationRequiredError extends IdemError {
  override readonly name = 'MigrationRequiredError'
  readonly code = 'migration-required' as const
}
