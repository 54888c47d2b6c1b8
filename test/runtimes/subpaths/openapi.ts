// idem/openapi's transform of a small OpenAPI 3.1 document on the runtime: the Node test
// validates what it returned and compares it with what Node's transform returns.
import { idempotencyOpenApi } from 'idem/openapi'
import { OPENAPI_DOCUMENT, OPENAPI_OPTIONS, type OpenApiResult } from './results.js'
import { reportResult } from './script.js'

await reportResult(async (): Promise<OpenApiResult> => {
  // `scope` is the middleware's; the description needs none of its value.
  const described = idempotencyOpenApi(structuredClone(OPENAPI_DOCUMENT), { ...OPENAPI_OPTIONS, scope: () => 'anonymous' })
  return { document: described as Record<string, unknown> }
})
