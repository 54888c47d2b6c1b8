import { StoreUnavailableError } from '../../core/errors/store-unavailable.js'
import { classifyDynamoError } from './errors.js'

/**
 * The part of the AWS SDK v3 client the store uses, typed by shape: a
 * `DynamoDBClient` (or a `DynamoDBDocumentClient`'s underlying client) fits.
 */
export interface DynamoClient {
  // The SDK's own signature is generic over every command; the store sends only its own.
  /** Sends one DynamoDB command (the SDK v3 `client.send`); `abortSignal` cancels it. */
  send(command: any, options?: { abortSignal?: AbortSignal }): Promise<any>
}

/** One store's way to DynamoDB: every call bounded by `timeoutMs` and its errors classified. */
export interface Wire {
  readonly table: string
  /**
   * Sends `command`. After `timeoutMs` the caller gets `StoreUnavailableError`; an
   * answer that arrives later anyway goes to `late` (the write may have happened).
   */
  send<T = unknown>(operation: string, command: object, late?: (output: T) => void): Promise<T>
}

export function wireFor(client: DynamoClient, table: string, timeoutMs: number): Wire {
  return {
    table,
    send<T>(operation: string, command: object, late?: (output: T) => void): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        let settled = false
        // The request itself is abandoned a while after the caller was answered, so a
        // server that never answers does not keep sockets open for ever.
        const abort = new AbortController()
        const abandon = setTimeout(() => abort.abort(), timeoutMs * 2 + 1_000)
        abandon.unref?.()
        const timer = setTimeout(() => {
          settled = true
          reject(new StoreUnavailableError(`DynamoDB did not answer ${operation} within ${timeoutMs} ms (timeoutMs)`))
        }, timeoutMs)
        let reply: Promise<T>
        try {
          reply = client.send(command, { abortSignal: abort.signal })
        } catch (error) {
          clearTimeout(timer)
          clearTimeout(abandon)
          reject(classifyDynamoError(error, table))
          return
        }
        reply.then(
          (output) => {
            clearTimeout(abandon)
            if (settled) return late?.(output)
            settled = true
            clearTimeout(timer)
            resolve(output)
          },
          (error: unknown) => {
            clearTimeout(abandon)
            if (settled) return
            settled = true
            clearTimeout(timer)
            reject(classifyDynamoError(error, table))
          },
        )
      })
    },
  }
}
