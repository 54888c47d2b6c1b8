// Runs a program written for `express` or `koa` on the older major the repository
// installs beside the current one (Express 4 as `express4`, Koa 2 as `koa2`):
// node --import ./test/support/older-majors-loader.mjs program.mjs
import { register } from 'node:module'

const hooks = `const OLDER = { express: 'express4', koa: 'koa2' }
export async function resolve(specifier, context, next) {
  return next(OLDER[specifier] ?? specifier, context)
}`
register(`data:text/javascript,${encodeURIComponent(hooks)}`)
