import type { ProblemDetails } from './errors/problem-error.js'

const decoder = new TextDecoder()

/**
 * Reads an error body as RFC 9457 problem details. `application/problem+json` is the
 * expected type, but any JSON object is read the same way, since many servers send
 * problems as plain `application/json`; anything else gives `{}` and the text is kept.
 */
export function readProblem(body: Uint8Array, headers: Headers): { problem: ProblemDetails; text: string } {
  const text = decoder.decode(body)
  const type = headers.get('content-type')?.toLowerCase() ?? ''
  if (!/[/+]json\b/.test(type)) return { problem: {}, text }
  try {
    const parsed: unknown = JSON.parse(text)
    if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) return { problem: parsed as ProblemDetails, text }
  } catch {
    // A body labelled JSON that does not parse is still an answer: keep its text.
  }
  return { problem: {}, text }
}
