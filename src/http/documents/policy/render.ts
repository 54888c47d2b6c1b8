// The page's blocks, and how Markdown and HTML each write them, so that both say the
// same thing in the same words. Text uses two inline marks only: `code` and [label](url).

/** One block of the page. */
export type Block =
  | { kind: 'heading'; level: number; text: string }
  | { kind: 'paragraph'; text: string }
  | { kind: 'list'; items: string[] }
  | { kind: 'table'; head: string[]; rows: string[][] }

export function markdown(blocks: Block[]): string {
  const out: string[] = []
  for (const block of blocks) {
    if (block.kind === 'heading') out.push(`${'#'.repeat(block.level)} ${block.text}`)
    else if (block.kind === 'paragraph') out.push(block.text)
    else if (block.kind === 'list') out.push(block.items.map((item) => `- ${item}`).join('\n'))
    else {
      const row = (cells: string[]): string => `| ${cells.map((c) => c.replace(/\|/g, '\\|')).join(' | ')} |`
      out.push([row(block.head), row(block.head.map(() => '---')), ...block.rows.map(row)].join('\n'))
    }
  }
  return `${out.join('\n\n')}\n`
}

export function html(blocks: Block[], title: string, fragment: boolean): string {
  const out: string[] = []
  for (const block of blocks) {
    if (block.kind === 'heading') out.push(`<h${block.level}>${inline(block.text)}</h${block.level}>`)
    else if (block.kind === 'paragraph') out.push(`<p>${inline(block.text)}</p>`)
    else if (block.kind === 'list') out.push(`<ul>\n${block.items.map((item) => `  <li>${inline(item)}</li>`).join('\n')}\n</ul>`)
    else {
      const head = block.head.map((c) => `<th>${inline(c)}</th>`).join('')
      const rows = block.rows.map((cells) => `    <tr>${cells.map((c) => `<td>${inline(c)}</td>`).join('')}</tr>`).join('\n')
      out.push(`<table>\n  <thead><tr>${head}</tr></thead>\n  <tbody>\n${rows}\n  </tbody>\n</table>`)
    }
  }
  const body = out.join('\n')
  if (fragment) return `${body}\n`
  return `<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>${escape(title)}</title>\n</head>\n<body>\n${body}\n</body>\n</html>\n`
}

/** The two inline marks as HTML: `code` spans and [label](url) links; everything else escaped. */
function inline(text: string): string {
  let out = ''
  const mark = /`([^`]*)`|\[((?:`[^`]*`|[^\]])*)\]\(([^)\s]+)\)/g
  let at = 0
  for (const match of text.matchAll(mark)) {
    out += escape(text.slice(at, match.index))
    if (match[1] !== undefined) out += `<code>${escape(match[1])}</code>`
    else out += `<a href="${escape(match[3]!)}">${inline(match[2]!)}</a>`
    at = match.index + match[0].length
  }
  return out + escape(text.slice(at))
}

function escape(text: string): string {
  return text.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!)
}
