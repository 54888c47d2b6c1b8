import { assertKnownOptions, optionNames } from '../core/errors/option-checks.js'

/**
 * Responses for requests that are idempotent by their nature and need no key
 * (RFC 9110 §9.2.2): a PUT that replaces a resource by its id, and a DELETE. The
 * database does the work (an upsert by id, a delete by id); these helpers make the
 * answer to a retry look like the answer to the first attempt, so clients can retry
 * them blindly. See docs/http.md, "Natural idempotency".
 */

export interface PutResult {
  /** True when the upsert inserted the row (Postgres: `RETURNING (xmax = 0) AS created`). */
  created: boolean
  /** The resource as stored, sent back as JSON. */
  body: unknown
  /** The resource's URL, sent as `Location` and `Content-Location`. */
  location?: string
}

const PUT_OPTIONS = optionNames<PutResult>({ created: true, body: true, location: true })

/**
 * The answer to `PUT /things/:id` after an upsert: 201 with `Location` when it
 * created the resource, 200 when it replaced it. A retry of a PUT that created the
 * resource answers 200 with the same body: the state is the same either way.
 * @example return putResponse({ created: row.created, body: row, location: `/things/${id}` })
 */
export function putResponse(options: PutResult): Response {
  assertKnownOptions('putResponse', options, PUT_OPTIONS)
  const { created, body, location } = options
  const headers = new Headers({ 'content-type': 'application/json' })
  if (location !== undefined) {
    headers.set('content-location', location)
    if (created) headers.set('location', location)
  }
  return new Response(JSON.stringify(body ?? null), { status: created ? 201 : 200, headers })
}

/**
 * The answer to `DELETE /things/:id`: 204 whether or not the resource was there, so
 * that a retry of a delete that succeeded (and whose answer was lost) also succeeds
 * rather than failing with 404.
 * @example await db.query('DELETE FROM things WHERE id = $1', [id]); return deleteResponse()
 */
export function deleteResponse(): Response {
  return new Response(null, { status: 204 })
}
