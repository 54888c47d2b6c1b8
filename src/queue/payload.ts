/**
 * The JSON text a dead letter keeps of a message body, so an operator can read it and
 * replay it: JSON-able values as they are; bytes as the JSON they hold, else as their
 * UTF-8 text, else as `{ "base64": … }`. Never throws: a dead letter must always be
 * written.
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
      return JSON.stringify(JSON.parse(text))
    } catch {
      return JSON.stringify(text)
    }
  }
  try {
    const text = JSON.stringify(body, (_, value: unknown) => (typeof value === 'bigint' ? value.toString() : value))
    return text ?? 'null'
  } catch {
    return JSON.stringify(String(body))
  }
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
