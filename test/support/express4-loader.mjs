// Runs a program written for `express` on Express 4, which the repository installs as
// `express4`: node --import ./test/support/express4-loader.mjs program.mjs
import { register } from 'node:module'

const hooks = `export async function resolve(specifier, context, next) {
  return next(specifier === 'express' ? 'express4' : specifier, context)
}`
register(`data:text/javascript,${encodeURIComponent(hooks)}`)
