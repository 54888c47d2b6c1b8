import { parseSync } from '@swc/core'
import { readFileSync } from 'node:fs'
for (const file of process.argv.slice(2)) {
  const text = readFileSync(file, 'utf8')
  const lines = text.split('\n').length
  if (lines > 300) console.log(`${file}: ${lines} lines`)
  const ast = parseSync(text, { syntax: 'typescript', target: 'es2022' })
  const base = ast.span.start
  const lineOf = (pos) => text.slice(0, Buffer.from(text).subarray(0, pos - base).toString().length).split('\n').length
  const visit = (node) => {
    if (Array.isArray(node)) return node.forEach(visit)
    if (node === null || typeof node !== 'object') return
    if (['FunctionDeclaration', 'FunctionExpression', 'ArrowFunctionExpression', 'ClassMethod', 'PrivateMethod', 'Constructor'].includes(node.type) && node.span) {
      const n = lineOf(node.span.end) - lineOf(node.span.start) + 1
      if (n > 60) console.log(`${file}:${lineOf(node.span.start)} ${node.type} ${n} lines`)
    }
    for (const key in node) if (key !== 'span') visit(node[key])
  }
  visit(ast)
}
