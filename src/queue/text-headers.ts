/** Header values as text (AMQP headers may be numbers, buffers, nested tables). */
export function textHeaders(headers: Record<string, unknown> | undefined): Record<string, string> {
  const out: Record<string, string> = {}
  if (headers === undefined || headers === null) return out
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || value === null) continue
    out[name] = typeof value === 'string' ? value : value instanceof Uint8Array ? Buffer.from(value).toString('utf8') : JSON.stringify(value)
  }
  return out
}
