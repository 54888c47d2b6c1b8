/**
 * idem's own answers (a replay, a problem) written to a Node response, shared by the
 * Express, Koa and NestJS adapters and the webhook receiver: not on a fresh request's
 * path, which sends the route's held reply (`response.ts`).
 */
import type { ServerResponse } from 'node:http'
import { NO_BODY_STATUSES } from '../../../headers/no-body-statuses.js'
import type { HttpAnswer } from '../../exchange.js'
import { byteLength, wireValue } from '../../stored-response.js'
import { endWith, release } from './response.js'

/**
 * Writes an answer of idem's own to a Node response that has not started. Headers that
 * earlier middleware set (CORS, HSTS, a request id) are kept, as they would be without
 * idem; the answer's own replace any of the same name, repeated fields kept apart, each
 * value as its bytes (`wireValue`), and `Content-Length` is the body's own.
 */
export function sendAnswer(res: ServerResponse, answer: HttpAnswer, closeConnection: boolean): void {
  // A route still captured (it ran past its deadline, and idem answers for it) has
  // written nothing: the answer goes out through the response's own methods.
  const own = release(res)
  const headers = answer.headers.slice()
  const length = byteLength(answer.body)
  if (NO_BODY_STATUSES.has(answer.status)) {
    if (res.hasHeader('content-length')) res.removeHeader('content-length')
  } else headers.push('content-length', String(length))
  if (closeConnection) headers.push('connection', 'close')
  // Not writeHead(status, list): once any header was set on the response, it sets each
  // field of the list over the last, and a repeated field (Set-Cookie) keeps one value.
  for (let i = 0; i < headers.length; i += 2) res.removeHeader(headers[i]!)
  for (let i = 0; i + 1 < headers.length; i += 2) res.appendHeader(headers[i]!, wireValue(headers[i + 1]!))
  Reflect.apply(own.writeHead, res, [answer.status])
  if (NO_BODY_STATUSES.has(answer.status)) Reflect.apply(own.end, res, [])
  else endWith(res, own.end, answer.body, length)
}
