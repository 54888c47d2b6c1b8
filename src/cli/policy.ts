import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { Option, type Command } from 'commander'
import { CliError } from '../core/errors/cli-error.js'
import { InvalidOptionError } from '../core/errors/invalid-option.js'
import { idempotencyPolicy, type PolicyFormat } from '../http/documents/policy/index.js'
import type { CommandContext } from './context.js'
import { count } from './parse.js'

interface Flags {
  config: string
  format: PolicyFormat['format']
  title?: string
  headingLevel?: NonNullable<PolicyFormat['headingLevel']>
}

/**
 * `idem policy`: loads the middleware options from a module (its default export, or
 * that export's `idempotency` property) and prints the policy page they make
 * (`idempotencyPolicy`), as Markdown, HTML or JSON, for the API's own docs.
 * @example registerPolicy(program, { io, exit }) // then: idem policy --config src/idempotency-options.mjs --format md
 * @see docs/policy.md
 */
export function registerPolicy(program: Command, { io }: CommandContext): void {
  program
    .command('policy')
    .summary("print your API's idempotency policy, for its docs, from the middleware options")
    .description(
      'Prints the page that tells your API\'s clients how to retry it (the Idempotency-Key syntax, methods, retention, what is replayed, ' +
        'what to do on 409 and 422, every problem type), from the options you give idempotency(), resolved as the middleware resolves them. ' +
        '<module> is an ES module (.mjs, or .js in a "type": "module" package) whose default export is those options, or has them as its ' +
        '"idempotency" property. A store is not needed.',
    )
    .requiredOption('--config <module>', 'the module exporting the middleware options')
    .addOption(new Option('--format <format>', 'the page format').choices(['md', 'html', 'json']).default('md'))
    .option('--title <text>', "the page's heading (default: Idempotent requests)")
    .option('--heading-level <n>', "the heading's level, to fit the page into larger docs", count(1, 5))
    .addHelpText(
      'after',
      `
Examples:
  $ idem policy --config src/idempotency-options.mjs > docs/idempotency.md
  $ idem policy --config src/idempotency-options.mjs --format html --title "Retrying requests" > public/idempotency.html`,
    )
    .action(async (flags: Flags) => {
      let exported: unknown
      try {
        exported = ((await import(pathToFileURL(resolve(flags.config)).href)) as { default?: unknown }).default
      } catch (error) {
        throw new CliError(`cannot load ${flags.config}: ${(error as Error).message}`, 'pass the path of an ES module (.mjs) that exports the options', { cause: error })
      }
      const nested = (exported as { idempotency?: unknown } | undefined)?.idempotency
      const options = nested !== null && typeof nested === 'object' ? nested : exported
      if (options === null || typeof options !== 'object') {
        throw new CliError(`${flags.config} has no options as its default export`, 'end the module with export default { scope, ttlMs, … } (the options of idempotency())')
      }
      let page: string
      try {
        page = idempotencyPolicy(options, {
          format: flags.format,
          ...(flags.title === undefined ? {} : { title: flags.title }),
          ...(flags.headingLevel === undefined ? {} : { headingLevel: flags.headingLevel }),
        })
      } catch (error) {
        if (!(error instanceof InvalidOptionError)) throw error
        throw new CliError(error.message, `fix the option in ${flags.config}: the middleware would refuse it at start-up too`, { cause: error })
      }
      io.out(page.trimEnd())
    })
}
