/**
 * `idem/openapi/nestjs`: idem's contract in the document `@nestjs/swagger` generates,
 * on exactly the routes `IdempotencyInterceptor` is bound to. `@nestjs/swagger` itself
 * is not imported.
 */
import type { INestApplication } from '@nestjs/common'
import { IdempotencyInterceptor, type NestIdempotencyOptions } from '../../nestjs.js'
import { describeIdempotency, type OpenApiDocumentLike, type OpenApiOptions } from './document.js'
import { PROTECTED_MARK, takeMarks } from './marks.js'
import type { Json } from './operations.js'

export type { OpenApiDocumentLike, OpenApiOptions } from './document.js'

// Nest's metadata keys (INTERCEPTORS_METADATA, PATH_METADATA), unchanged since Nest 6, and
// @nestjs/swagger's for @ApiExtension (DECORATORS.API_EXTENSION), whose keys it puts on the
// operation: the same in @nestjs/swagger 7 to 11.
const INTERCEPTORS = '__interceptors__'
const PATH = 'path'
const API_EXTENSION = 'swagger/apiExtension'

interface Metadata {
  getMetadata?(key: string, target: object): unknown
  defineMetadata?(key: string, value: unknown, target: object): void
  deleteMetadata?(key: string, target: object): boolean
}

/**
 * The document `@nestjs/swagger` generates, with idem's contract on the routes the
 * interceptor protects: those it is bound to (`@UseInterceptors(IdempotencyInterceptor)`
 * on the controller or the method, or app-wide through `APP_INTERCEPTOR` or
 * `useGlobalInterceptors`) whose method is in `methods` and whose path the `routes` list
 * reaches, or the `operations` named. Pass the same options the interceptor is given
 * (`IdempotencyModule.forRoot(options)`), and `SwaggerModule.createDocument` as a
 * function: while it runs, the bound handlers carry an `@ApiExtension` mark, so the
 * generated operations say which they are, whatever their operationIds and paths.
 *
 * @param app the application, created (`NestFactory.create`) and not necessarily listening
 * @param createDocument makes the document: `() => SwaggerModule.createDocument(app, config)`
 * @param options the interceptor's options
 * @param openApi `operations` (needed with a `routes` function) and the problem schema's name
 * @returns the described document
 * @throws InvalidOptionError naming the option, as the interceptor would
 * @see docs/openapi.md
 *
 * @example
 * const document = idempotencyOpenApiDocument(app, () => SwaggerModule.createDocument(app, config), idempotencyOptions)
 * SwaggerModule.setup('docs', app, document)
 */
export function idempotencyOpenApiDocument<D extends OpenApiDocumentLike, Tx = unknown>(
  app: INestApplication,
  createDocument: () => D,
  options: NestIdempotencyOptions<Tx>,
  openApi: OpenApiOptions = {},
): D {
  const caller = 'idempotencyOpenApiDocument (nestjs)'
  const description = describeIdempotency(options, openApi, caller)
  if (typeof createDocument !== 'function') throw new TypeError(`${caller}: the second argument must be a function that makes the document: () => SwaggerModule.createDocument(app, config)`)
  const reflect = Reflect as unknown as Metadata
  if (typeof reflect.getMetadata !== 'function' || typeof reflect.defineMetadata !== 'function' || typeof reflect.deleteMetadata !== 'function') {
    throw new TypeError(`${caller}: Reflect metadata is missing: import 'reflect-metadata' first, as every Nest app does`)
  }
  const handlers = protectedHandlers(app, reflect)
  const previous = new Map(handlers.map((handler) => [handler, reflect.getMetadata!(API_EXTENSION, handler)]))
  let generated: D
  try {
    for (const [handler, before] of previous) reflect.defineMetadata!(API_EXTENSION, { ...(before as object | undefined), [PROTECTED_MARK]: true }, handler)
    generated = createDocument()
  } finally {
    for (const [handler, before] of previous) {
      if (before === undefined) reflect.deleteMetadata!(API_EXTENSION, handler)
      else reflect.defineMetadata!(API_EXTENSION, before, handler)
    }
  }
  const { document, marked, count } = takeMarks(generated as unknown as Json)
  if (handlers.length > 0 && count === 0 && openApi.operations === undefined) {
    throw new Error(`${caller}: the document has none of the ${handlers.length} routes the interceptor is bound to: was it made by SwaggerModule.createDocument (@nestjs/swagger 7 or later) inside createDocument?`)
  }
  return description.apply(document as unknown as D, { explicit: openApi.operations, candidates: marked })
}

interface ModuleLike {
  readonly controllers: Map<unknown, { readonly metatype: unknown }>
}
interface NestInternals {
  readonly container?: { getModules(): Map<string, ModuleLike> }
  readonly config?: { getGlobalInterceptors(): unknown[]; getGlobalRequestInterceptors?(): Array<{ metatype?: unknown; instance?: unknown }> }
}

/** The route handlers (controller methods) the interceptor runs for, read from Nest's metadata as @nestjs/swagger reads it. */
function protectedHandlers(app: INestApplication, reflect: Metadata): Array<(...args: unknown[]) => unknown> {
  // The same internals @nestjs/swagger's scanner reads: the module container and the app's config.
  const { container, config } = app as unknown as NestInternals
  if (container === undefined || config === undefined) throw new TypeError('idempotencyOpenApiDocument (nestjs): the first argument must be the Nest application (NestFactory.create)')
  const global =
    config.getGlobalInterceptors().some(isIdempotencyInterceptor) ||
    (config.getGlobalRequestInterceptors?.() ?? []).some((wrapper) => isIdempotencyInterceptor(wrapper.metatype) || isIdempotencyInterceptor(wrapper.instance))
  const bound = (target: object): boolean => ((reflect.getMetadata!(INTERCEPTORS, target) as unknown[] | undefined) ?? []).some(isIdempotencyInterceptor)
  const handlers = new Set<(...args: unknown[]) => unknown>()
  for (const module of container.getModules().values()) {
    for (const { metatype } of module.controllers.values()) {
      if (typeof metatype !== 'function') continue
      const onController = global || bound(metatype)
      for (const handler of methodsOf(metatype.prototype as object)) {
        if (reflect.getMetadata!(PATH, handler) !== undefined && (onController || bound(handler))) handlers.add(handler)
      }
    }
  }
  return [...handlers]
}

function methodsOf(prototype: object): Array<(...args: unknown[]) => unknown> {
  const methods: Array<(...args: unknown[]) => unknown> = []
  for (let proto: object | null = prototype; proto !== null && proto !== Object.prototype; proto = Object.getPrototypeOf(proto) as object | null) {
    for (const name of Object.getOwnPropertyNames(proto)) {
      if (name === 'constructor') continue
      const value = Object.getOwnPropertyDescriptor(proto, name)?.value as unknown
      if (typeof value === 'function') methods.push(value as (...args: unknown[]) => unknown)
    }
  }
  return methods
}

function isIdempotencyInterceptor(value: unknown): boolean {
  return value instanceof IdempotencyInterceptor || (typeof value === 'function' && (value === IdempotencyInterceptor || value.prototype instanceof IdempotencyInterceptor))
}
