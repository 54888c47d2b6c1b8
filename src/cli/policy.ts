import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { InvalidOptionError } from '../core/errors/invalid-option.js'
import { idempotencyPolicy, type PolicyFormat } from '../http/policy.js'
import { parseFlags } from './args.js'
import { EXIT, type CliIo } from './io.js'

const USAGE = `usage: idem policy --config <module> [--format md|html|json] [--title <text>] [--heading-level <1-5>]

Prints the idempotency policy of your API, for your own API docs, from the options you
give the middleware. <module> is an ES module (.mjs, or .js in a "type": "module"
package) whose default export is the options object of idempotency(), or an object
with those options as its "idempotency" property. A store is not needed.`

/**
 * `idem policy`: loads the middleware options from a module and prints the policy page
 * they make (`idempotencyPolicy`), as Markdown, HTML or JSON.
 * @returns the exit code (`EXIT`): 0, or 2 for a usage mistake, a module that does not load, or invalid options
 * @example await policyCommand(['--config', 'src/idempotency-options.mjs', '--format', 'md'])
 * @see docs/policy.md
 */
export async function policyCommand(argv: string[], io: CliIo = { out: console.log, err: console.error }): Promise<number> {
  const values = parseFlags(
    argv,
    { config: { type: 'string' }, format: { type: 'string', default: 'md' }, title: { type: 'string' }, 'heading-level': { type: 'string' } } as const,
    USAGE,
    io,
  )
  if (typeof values === 'number') return values
  const { config, format, title } = values
  const level = values['heading-level'] === undefined ? undefined : Number(values['heading-level'])
  if (config === undefined || !['md', 'html', 'json'].includes(format) || (level !== undefined && ![1, 2, 3, 4, 5].includes(level))) {
    io.err(USAGE)
    return EXIT.usage
  }
  let exported: unknown
  try {
    exported = ((await import(pathToFileURL(resolve(config)).href)) as { default?: unknown }).default
  } catch (error) {
    io.err(`idem policy: cannot load ${config}: ${(error as Error).message}`)
    return EXIT.usage
  }
  const nested = (exported as { idempotency?: unknown } | undefined)?.idempotency
  const options = nested !== null && typeof nested === 'object' ? nested : exported
  if (options === null || typeof options !== 'object') {
    io.err(`idem policy: ${config} must export the middleware options as its default export (export default { scope, ttlMs, … })`)
    return EXIT.usage
  }
  const rendering = {
    format: format as PolicyFormat['format'],
    ...(title === undefined ? {} : { title }),
    ...(level === undefined ? {} : { headingLevel: level as NonNullable<PolicyFormat['headingLevel']> }),
  }
  try {
    io.out(idempotencyPolicy(options, rendering).trimEnd())
  } catch (error) {
    if (!(error instanceof InvalidOptionError)) throw error
    io.err(`idem policy: ${error.message}`)
    return EXIT.usage
  }
  return EXIT.ok
}
