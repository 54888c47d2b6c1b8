import { operationName, operationsOf, type Json, type OperationRef } from './operations.js'

/**
 * The vendor extension an integration puts on the routes the middleware runs on, through
 * the framework's own OpenAPI generator, so that the generated operations say which they
 * are; it is taken off again before the document is described.
 */
export const PROTECTED_MARK = 'x-idem-protected'

/**
 * The document without the marks, and the operations that carried one (`METHOD /path`).
 * Only the marked operations are copied; the rest of the document is shared.
 */
export function takeMarks(document: Json): { document: Json; marked: (ref: OperationRef) => boolean; count: number } {
  const names = new Set<string>()
  let paths: Json | undefined
  for (const ref of operationsOf(document)) {
    if (!Object.hasOwn(ref.operation, PROTECTED_MARK)) continue
    names.add(operationName(ref))
    const { [PROTECTED_MARK]: _mark, ...operation } = ref.operation
    paths ??= { ...(document.paths as Json) }
    paths[ref.path] = { ...(paths[ref.path] as Json), [ref.method]: operation }
  }
  return { document: paths === undefined ? document : { ...document, paths }, marked: (ref) => names.has(operationName(ref)), count: names.size }
}
