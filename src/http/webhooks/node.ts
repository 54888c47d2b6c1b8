/**
 * The webhook receiver on Node's request, for the Express, Koa, Fastify and NestJS adapters:
 * the raw body bytes found wherever the framework left them, and the answer sent.
 * Mapping only: the receiver (`webhook.ts`) holds the behaviour.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { InvalidOptionError } from '../../core/errors/invalid-option.js'
import type { HttpAnswer, HttpRequest } from '../exchange.js'
import { declaresBody, nodeBody, nodeRequest } from '../adapters/node/request.js'
import { sendAnswer } from '../adapters/node/answer.js'

/** A Node request as the webhook receiver reads it, and whether its upload was left unread (a 413). */
export interface NodeDelivery {
  readonly request: HttpRequest
  unfinished(): boolean
}

/**
 * The delivery's raw bytes, best first: what the framework kept of them (`kept`: a body
 * parser's buffer, `rawBody`), else the stream when nothing has read it, else nothing
 * when the request has no body. A body that was read and whose bytes were not kept
 * cannot be verified, whatever the parser made of it: that throws, naming `fix`.
 * @throws InvalidOptionError saying how to keep the raw bytes
 */
export function nodeDelivery(req: IncomingMessage, url: string, kept: unknown, fix: string): NodeDelivery {
  if (kept instanceof Uint8Array) return { request: nodeRequest(req, url, kept), unfinished: () => false }
  if (!req.readableEnded && !req.readableDidRead) {
    const body = nodeBody(req)
    return { request: nodeRequest(req, url, body), unfinished: body.unfinished }
  }
  if (!declaresBody(req)) return { request: nodeRequest(req, url, null), unfinished: () => false }
  throw new InvalidOptionError(`webhookReceiver: the body was parsed before the receiver and its raw bytes were not kept, so no signature can be checked; ${fix}`)
}

/** The raw bytes a framework or a body parser's hook kept on the request as `rawBody` (NestJS's `rawBody: true`, `express.json({ verify })`, fastify-raw-body). */
export function keptRawBody(request: object): unknown {
  return 'rawBody' in request ? request.rawBody : undefined
}

/** Fastify's reply, as far as an answer needs it (NestJS's `@Res()` on the Fastify platform too). */
export interface ReplyLike {
  code(status: number): unknown
  header(name: string, value: string): unknown
  send(body: string | Uint8Array): unknown
}

/** Sends a receiver's answer through Fastify's reply. */
export function sendToReply(reply: ReplyLike, answer: HttpAnswer): void {
  reply.code(answer.status)
  for (let i = 0; i + 1 < answer.headers.length; i += 2) reply.header(answer.headers[i]!, answer.headers[i + 1]!)
  // As bytes: Fastify adds a charset to the content type of a string.
  reply.send(typeof answer.body === 'string' ? Buffer.from(answer.body, 'utf8') : answer.body)
}

/** Sends a receiver's answer on Node's response, closing the connection when the upload was left unread. */
export function sendToResponse(res: ServerResponse, answer: HttpAnswer, delivery: NodeDelivery): void {
  sendAnswer(res, answer, delivery.unfinished())
}
