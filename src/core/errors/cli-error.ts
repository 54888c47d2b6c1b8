/**
 * A mistake the person at the keyboard can fix: what went wrong, and what to do about
 * it. The `idem` command prints it as two lines, exit code 2, never a stack trace; the
 * stores' CLI entries (ports/store-entry.ts) throw it for a flag or a connection they
 * cannot use.
 */
export class CliError extends Error {
  constructor(
    message: string,
    readonly fix: string,
    options?: ErrorOptions,
  ) {
    super(message, options)
    this.name = 'CliError'
  }
}
