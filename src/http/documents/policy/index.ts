import { assertKnownOptions, optionNames } from '../../../core/errors/option-checks.js'
import type { IdempotencyOptions } from '../../options.js'
import { describePolicy } from './describe.js'
import { policyBlocks } from './page.js'
import { html, markdown } from './render.js'

export { describePolicy, type IdempotencyPolicyDocument, type PolicyError } from './describe.js'
export { bytes, duration } from './words.js'

/** How `idempotencyPolicy` renders the page. */
export interface PolicyFormat {
  /** Markdown, a standalone HTML page (or a fragment, see `fragment`), or the policy as JSON data. */
  format: 'md' | 'html' | 'json'
  /** The page's heading. @default 'Idempotent requests' */
  title?: string
  /** The level of the page's heading (its sections are one below), to fit the page into larger docs. @default 1 */
  headingLevel?: 1 | 2 | 3 | 4 | 5
  /**
   * The paths the middleware protects, when the framework's router decides that (the
   * middleware mounted on some routes only) and the options cannot say.
   * @default the `routes` option's list, or every endpoint
   */
  paths?: readonly string[]
  /** HTML only: the content without `<html>`, `<head>` and `<body>`, to embed in a page. @default false */
  fragment?: boolean
}

const FORMAT_OPTIONS = optionNames<PolicyFormat>({ format: true, title: true, headingLevel: true, paths: true, fragment: true })

/**
 * Renders an "Idempotency" page for your own API docs from the middleware options you
 * serve with: the header's syntax, which methods and paths take a key, whether it is
 * required, how long responses are kept, what is replayed, whether keys are per client,
 * and every problem a client can get, with its `type` URI (after `problemTypes`) and
 * what to do about it (409: wait `Retry-After` and retry with the same key; 422: a new
 * request needs a new key). The options are resolved exactly as `idempotency()`
 * resolves them, so the page says what the middleware does. A store is not needed:
 * without `store` or `idem` the page describes the HTTP contract alone.
 *
 * @param options the options given to `idempotency()` (any adapter)
 * @param format `md`, `html` or `json`, and the page's title, heading level and paths
 * @returns the page (JSON: the `IdempotencyPolicyDocument`, indented)
 * @throws InvalidOptionError as `idempotency()` would, for the same options
 * @see docs/policy.md
 *
 * @example
 * import { idempotencyPolicy } from 'idem/fetch'
 * const options = { store, scope, ttlMs: 6 * 3600_000, problemTypes: 'https://docs.example.com/errors' }
 * app.use('/payments/*', idempotency(options))
 * await writeFile('docs/idempotency.md', idempotencyPolicy(options, { format: 'md' }))
 */
export function idempotencyPolicy<Tx, Native>(options: IdempotencyOptions<Tx, Native>, format: PolicyFormat): string {
  assertKnownOptions('idempotencyPolicy', format, FORMAT_OPTIONS)
  if (!['md', 'html', 'json'].includes(format.format)) {
    throw new TypeError('idempotencyPolicy: the second argument must be { format: "md" | "html" | "json" }')
  }
  const document = describePolicy(options, format.paths)
  if (format.format === 'json') return `${JSON.stringify(document, null, 2)}\n`
  const blocks = policyBlocks(document, format.title ?? 'Idempotent requests', format.headingLevel ?? 1)
  return format.format === 'md' ? markdown(blocks) : html(blocks, format.title ?? 'Idempotent requests', format.fragment === true)
}
