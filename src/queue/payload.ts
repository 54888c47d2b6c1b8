/**
 * The JSON text a dead letter keeps of a message body, so an operator can read it and
 * replay it: JSON-able values as they are; bytes as the JSON they hold, else as their
 * UTF-8 text, else as `{ "base64": … }`. JSON holding a lone surrogate (`"\ud800"`, which
 * Postgres' jsonb refuses) is kept as its text, `{ "json": "…" }`. Never throws: a dead
 * letter must always be written.
 */
export function deadLetterPayload(body: unknown): string {
  if (body instanceof Uint8Array) {
    let text: string
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(body)
    } catch {
      return JSON.stringify({ base64: Buffer.from(body).toString('base64') })
    }
    try {
      return jsonText(JSON.parse(text))
    } catch {
      return JSON.stringify(text)
    }
  }
  try {
    return jsonText(body)
  } catch {
    return JSON.stringify(String(body))
  }
}

function jsonText(value: unknown): string {
  let loneSurrogate = false
  const text = JSON.stringify(value, (key, part: unknown) => {
    if (!key.isWellFormed() || (typeof part === 'string' && !part.isWellFormed())) loneSurrogate = true
    return typeof part === 'bigint' ? part.toString() : part
  })
  if (text === undefined) return 'null'
  return loneSurrogate ? JSON.stringify({ json: text }) : text
}

/** A one-line description of an error for `last_error` columns: name, message, and the cause's message. */
export function errorText(error: unknown): string {
  if (error instanceof Error) {
    const cause = error.cause instanceof Error ? ` (cause: ${error.cause.message})` : ''
    const text = `${error.name}: ${error.message}${cause}`
    return text.length > 4_000 ? `${text.slice(0, 4_000)}…` : text
  }
  const text = typeof error === 'string' ? error : (JSON.stringify(error) ?? String(error))
  return text.length > 4_000 ? `${text.slice(0, 4_000)}…` : text
}
