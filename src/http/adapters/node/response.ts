/**
 * Node's `ServerResponse` mapped to the middleware's exchange, shared by the Express,
 * Fastify and NestJS adapters (the request side is `request.ts`): the route's reply
 * held on the response (`hold.ts`; its headers stay there, in Node's own list) until it is sent,
 * answers written with `writeHead` and `end`. No Web `Response` or `Headers` is made.
 * Mapping only: no idempotency behaviour here.
 */
import type { ServerResponse } from 'node:http'
import { NO_BODY_STATUSES } from '../../../headers/no-body-statuses.js'
import type { HttpAnswer, HttpBody, RouteReply } from '../../exchange.js'
import { byteLength, wireValue } from '../../stored-response.js'
import { hold, restore, unhold, type SecondAnswer } from './hold.js'

export { answeredStatus, recordHeaders, type SecondAnswer } from './hold.js'

// A small body goes out as latin1 text (one byte per character, so any bytes survive):
// Node then sends headers and body in one write instead of a writev of two buffers. Never
// as UTF-8 text: Node would encode the header block with the body's encoding, and each
// header byte above 0x7F would go out as two.
const SMALL_BODY = 16 * 1024

/**
 * A body as bytes.
 * @example res.end(bytesOf(answer.body))
 */
export function bytesOf(body: HttpBody): Uint8Array {
  return typeof body === 'string' ? Buffer.from(body, 'utf8') : body
}

// `length` is the body's byte length: a text body as long as its characters is ASCII,
// the same bytes in latin1, sent as it is (no copy of it as bytes, nor back as text).
function endWith(res: ServerResponse, end: ServerResponse['end'], body: HttpBody, length: number): void {
  if (length === 0) Reflect.apply(end, res, [])
  else if (typeof body === 'string' && body.length === length) Reflect.apply(end, res, [body, 'latin1'])
  else if (length <= SMALL_BODY) Reflect.apply(end, res, [bufferOf(bytesOf(body)).toString('latin1'), 'latin1'])
  else Reflect.apply(end, res, [bufferOf(bytesOf(body))])
}

function bufferOf(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
}

/**
 * Sends the route's reply that `captureResponse` held: its status and headers as the
 * route answered with them, put back on the response; its body goes out with its own
 * `Content-Length` (set, never removed: without it Node does not frame the body at all,
 * and a keep-alive client then cannot tell where the answer ends). The head is written
 * first, as `sendAnswer` writes a replay's: made inside `end`, Node would read a
 * `Content-Disposition` value's bytes as UTF-8, and the first answer would carry other
 * bytes than its replay.
 */
export function sendHeld(res: ServerResponse, body: HttpBody, closeConnection: boolean): void {
  const hold = unhold(res)
  const own = hold ?? res
  if (hold?.answer !== undefined) restore(res, hold, hold.answer)
  if (closeConnection) res.setHeader('connection', 'close')
  const status = hold?.answer?.status ?? res.statusCode
  if (NO_BODY_STATUSES.has(status)) {
    if (res.hasHeader('content-length')) res.removeHeader('content-length')
    Reflect.apply(own.end, res, [])
    return
  }
  const length = byteLength(body)
  res.setHeader('content-length', length)
  Reflect.apply(own.writeHead, res, [status])
  endWith(res, own.end, body, length)
}

/**
 * Writes an answer of idem's own to a Node response that has not started. Headers that
 * earlier middleware set (CORS, HSTS, a request id) are kept, as they would be without
 * idem; the answer's own replace any of the same name, repeated fields kept apart, each
 * value as its bytes (`wireValue`), and `Content-Length` is the body's own.
 */
export function sendAnswer(res: ServerResponse, answer: HttpAnswer, closeConnection: boolean): void {
  // A route still captured (it ran past its deadline, and idem answers for it) has
  // written nothing: the answer goes out through the response's own methods.
  const own = unhold(res) ?? res
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

/**
 * Holds what is written to a Node response instead of sending it, and resolves with the
 * route's reply when the route ends the response: its status, body and headers as they
 * are then. The route's answer is THE answer from that point: the response stays held
 * until the adapter sends it (`sendHeld` the reply itself, `sendAnswer` idem's own),
 * and whatever is written to it meanwhile (an error handler's answer, after the route
 * threw) is dropped, `second` told of it once, and the status and headers the route
 * answered with are put back when it is sent. Until then the response says it has sent
 * nothing (`headersSent` false), so an error handler answers (dropped) rather than
 * destroying the connection, as Express's does when headers were sent.
 *
 * A client that goes away changes nothing here: the route's transaction must stay
 * open until the route has finished with it (a rollback while it still writes would
 * let those writes land outside any transaction). It commits as usual, and a retry
 * with the same key gets the stored response. A route that never ends the response is
 * given up on at its deadline (`deadlineMs`); `sendAnswer` then releases it before it
 * sends idem's answer, and what the route writes later fails as a write after the end
 * does.
 * @example const reply = captureResponse(res, (answered, second) => told(answered, second))
 */
export function captureResponse(res: ServerResponse, second?: SecondAnswer): Promise<RouteReply<HttpBody>> {
  return hold(res, second)
}

/**
 * Releases a held response, dropping what was held: it is then written as usual, with
 * the status and headers it has now.
 * @example release(res)
 */
export function release(res: ServerResponse): void {
  unhold(res)
}
