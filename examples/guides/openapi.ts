// An orders API's OpenAPI document, before and after idem describes its contract in it:
// the same options serve the middleware and write the description, so the two cannot drift.
// node --experimental-strip-types examples/guides/openapi.ts
import type { IncomingHttpHeaders } from 'node:http'
import { Document, isScalar, parse, visit } from 'yaml'
import { idempotencyOpenApi } from 'idem/openapi'

// What the middleware is given (a store too, in the server: the description needs none).
const options = {
  // scope gets the framework's own request: Express's, Koa's, Fastify's or Nest's here.
  scope: (req: { headers: IncomingHttpHeaders }) => req.headers.authorization ?? 'anonymous',
  routes: ['/orders/*'],
  ttlMs: 48 * 60 * 60 * 1000,
  problemTypes: 'https://docs.example.com/errors',
}

// The document as the team writes it (or as its framework generates it).
const before = parse(`
openapi: 3.1.0
info: { title: Orders, version: '1.0' }
paths:
  /orders:
    post:
      operationId: createOrder
      requestBody:
        content:
          application/json:
            schema: { type: object, properties: { item: { type: string } } }
      responses:
        '201':
          description: The order was placed.
          content:
            application/json:
              schema: { type: object, properties: { id: { type: string } } }
  /orders/{id}:
    get:
      operationId: getOrder
      parameters: [{ name: id, in: path, required: true, schema: { type: string } }]
      responses:
        '200': { description: The order. }
`)

const after = idempotencyOpenApi(before, options)

// Printed as YAML, small lists and maps of plain values on one line.
const yaml = new Document(after)
visit(yaml, {
  Seq: (_, list) => void (list.flow = list.items.every(isScalar)),
  Map: (_, map) => void (map.flow = map.items.length <= 2 && map.items.every((pair) => isScalar(pair.value) && String(pair.value).length < 40)),
})
console.log(yaml.toString({ lineWidth: 100 }).trimEnd())
