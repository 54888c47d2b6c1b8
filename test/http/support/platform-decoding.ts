// Platforms that decode a request body before idem sees it, as the test apps run them:
// Nest's body parsers run before its interceptors, and API Gateway decodes a REST API's
// body before it calls the function. idem then gets the body decoded, and what the
// platform cannot decode it refuses itself: those front ends cannot pass the rows that
// check idem's own answers to such bodies.
import type { IncomingHttpHeaders } from 'node:http'
import type { Readable, Transform } from 'node:stream'
import { createBrotliDecompress, createGunzip, createInflate, gunzipSync, inflateSync } from 'node:zlib'
import { ENCODING_CASES } from './encoding-cases.js'

const REFUSED_BEFORE_IDEM = [ENCODING_CASES.several, ENCODING_CASES.unsupported, ENCODING_CASES.corrupt, ENCODING_CASES.bomb]

/** The encoding rows a Nest app on `platform` (of Nest `major`) cannot pass, each with why. */
export function nestCannot(major: number, platform: 'express' | 'fastify'): Record<string, string> {
  const why =
    platform === 'express'
      ? "Nest's body parsers (Express's) run before its interceptors: they decode the body, or refuse its coding or size themselves, before idem sees it"
      : "Fastify decodes no body: the app's hook that does (here as @fastify/compress does) runs before Nest's interceptors, and what it cannot decode, or decodes past Fastify's bodyLimit, never reaches idem"
  const cannot: Record<string, string> = Object.fromEntries(REFUSED_BEFORE_IDEM.map((name) => [name, why]))
  if (major === 10 && platform === 'express') cannot[ENCODING_CASES.br] = "Express 4's body-parser (Nest 10's) does not decode br: it answers 415 before idem sees the body"
  return cannot
}

const DECODERS: Readonly<Record<string, () => Transform>> = { gzip: createGunzip, deflate: createInflate, br: createBrotliDecompress }

/** What the hook needs of a Fastify instance (Nest's Fastify platform has a Fastify of its own). */
interface PreParsingHooks {
  addHook(name: 'preParsing', hook: (request: { headers: IncomingHttpHeaders }, reply: unknown, payload: Readable) => Promise<Readable>): unknown
}

/**
 * Fastify decodes no request body: an app that takes compressed ones decodes them in
 * `preParsing`, as @fastify/compress does (one coding; Content-Encoding left as sent; the
 * bytes received counted, for Fastify's check of Content-Length).
 */
export function decodeRequestBodies(fastify: PreParsingHooks): void {
  fastify.addHook('preParsing', async (request, _reply, payload) => {
    const decoder = DECODERS[String(request.headers['content-encoding'] ?? '')]?.()
    if (decoder === undefined) return payload
    const counted = Object.assign(decoder, { receivedEncodedLength: 0 })
    payload.on('data', (chunk: Buffer) => (counted.receivedEncodedLength += chunk.byteLength))
    return payload.pipe(counted)
  })
}

/** The encoding rows a REST API's function cannot pass (API Gateway answers them itself). */
export const REST_API_ENCODING_CANNOT: Readonly<Record<string, string>> = Object.fromEntries(
  [ENCODING_CASES.br, ...REFUSED_BEFORE_IDEM.filter((name) => name !== ENCODING_CASES.bomb)].map((name) => [
    name,
    'API Gateway decodes a REST API’s gzip and deflate bodies itself and answers 415 for any other coding, or a body that does not decode, before the function runs',
  ]),
)

/**
 * The body a REST API hands its function: gzip and deflate decoded (Content-Encoding
 * left as the client sent it), undefined for what API Gateway refuses with 415.
 */
export function restApiBody(body: Buffer, contentEncoding: string | undefined): Buffer | undefined {
  const coding = contentEncoding?.toLowerCase()
  if (coding === undefined || coding === 'identity') return body
  try {
    if (coding === 'gzip') return gunzipSync(body)
    if (coding === 'deflate') return inflateSync(body)
  } catch {
    return undefined
  }
  return undefined
}
