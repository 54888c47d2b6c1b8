// The size limits of src/ (tests aside): no file over 300 lines, no class over 150, no
// function over 60 (text aside: the lines inside a multi-line template literal, a
// migration's SQL or a Lua script, are data, not code, and do not count). `node
// tools/limits.mjs` lists what passes them, one line each, and exits 1 when anything does.
import { parseSync } from '@swc/core'
import { readFileSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
function* walk(dir) { for (const n of readdirSync(dir)) { const p = join(dir, n); if (statSync(p).isDirectory()) yield* walk(p); else if (p.endsWith('.ts') && !p.endsWith('.test.ts')) yield p } }
const out = []
for (const file of walk('src')) {
  const text = readFileSync(file, 'utf8')
  const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0)
  if (lines > 300) out.push(`file ${file} ${lines}`)
  const ast = parseSync(text, { syntax: 'typescript', target: 'es2022' })
  const base = ast.span.start
  const buf = Buffer.from(text, 'utf8')
  const lineAt = (off) => buf.subarray(0, off - base).toString('utf8').split('\n').length
  const visit = (node, name) => {
    if (!node || typeof node !== 'object') return
    if (Array.isArray(node)) { for (const n of node) visit(n, name); return }
    const t = node.type
    const isFn = ['FunctionDeclaration','FunctionExpression','ArrowFunctionExpression','ClassMethod','PrivateMethod','Constructor'].includes(t)
    const isClass = t === 'ClassDeclaration' || t === 'ClassExpression'
    let label = name
    if (t === 'FunctionDeclaration' || t === 'ClassDeclaration') label = node.identifier?.value
    if ((t === 'ClassMethod' || t === 'PrivateMethod') && node.key) label = node.key.value ?? node.key.id?.value
    if (t === 'VariableDeclarator' && node.id?.value) label = node.id.value
    if ((isFn || isClass) && node.span) {
      const n = lineAt(node.span.end) - lineAt(node.span.start) + 1 - (isFn ? textLines(node) : 0)
      if (isFn && (node.body || node.function?.body) && n > 60) out.push(`function ${file}:${label ?? '(anon)'} ${n}`)
      if (isClass && n > 150) out.push(`class ${file}:${label ?? '(anon)'} ${n}`)
    }
    for (const k of Object.keys(node)) if (k !== 'span') visit(node[k], label)
  }
  // Lines a function's multi-line template literals take beyond their first (nested functions' too).
  const textLines = (fn) => {
    let n = 0
    const walkText = (node) => {
      if (!node || typeof node !== 'object') return
      if (Array.isArray(node)) { for (const x of node) walkText(x); return }
      if (node.type === 'TemplateLiteral' && node.span) { n += lineAt(node.span.end) - lineAt(node.span.start); return }
      for (const k of Object.keys(node)) if (k !== 'span') walkText(node[k])
    }
    walkText(fn.body ?? fn.function?.body)
    return n
  }
  visit(ast.body)
}
for (const line of out.sort()) console.log(line)
console.log(`${out.length} over the limits`)
process.exitCode = out.length === 0 ? 0 : 1
