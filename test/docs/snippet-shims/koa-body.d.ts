// What @koa/bodyparser declares on Koa's request (see missing-packages.d.ts).
import 'koa'

declare module 'koa' {
  interface Request {
    body?: any
    rawBody: string
  }
}
