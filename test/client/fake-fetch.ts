import type { FetchFunction } from '../../src/client/index.js'

/** One scripted answer: a status (with optional headers and body), a thrown error, or "hang until aborted". */
export type Step =
  | number
  | { status: number; headers?: Record<string, string>; body?: string }
  | { throw: unknown }
  | 'hang'

export interface Sent {
  key: string | null
  method: string
  url: string
  body: string
  contentType: string | null
}

/**
 * A scripted `fetch` for unit tests: answers attempt n with `steps[n]` (the last step
 * repeats) and records what each attempt sent. 'hang' never answers but honours the
 * attempt's signal, as a real fetch does.
 */
export function scriptedFetch(steps: Step[]): { fetch: FetchFunction; sent: Sent[] } {
  const sent: Sent[] = []
  const fetch: FetchFunction = async (request) => {
    sent.push({
      key: request.headers.get('idempotency-key'),
      method: request.method,
      url: request.url,
      body: await request.text(),
      contentType: request.headers.get('content-type'),
    })
    const step = steps[Math.min(sent.length - 1, steps.length - 1)] as Step
    if (step === 'hang') {
      return new Promise<Response>((_, reject) => {
        request.signal.addEventListener('abort', () => reject(request.signal.reason), { once: true })
      })
    }
    if (typeof step === 'object' && 'throw' in step) throw step.throw
    const { status, headers, body } = typeof step === 'number' ? { status: step, headers: undefined, body: undefined } : step
    return new Response(status === 204 ? null : (body ?? `{"status":${status}}`), { status, headers: { 'content-type': 'application/json', ...headers } })
  }
  return { fetch, sent }
}

/** What undici throws when a connection drops: a TypeError with the reason in `cause`. */
export function networkError(): TypeError {
  return new TypeError('fetch failed', { cause: new Error('other side closed') })
}

/** An sf-string header value back to the key. */
export function unquote(header: string | null): string {
  if (header === null || !header.startsWith('"') || !header.endsWith('"')) throw new Error(`not an sf-string: ${header}`)
  return header.slice(1, -1).replace(/\\(.)/g, '$1')
}
