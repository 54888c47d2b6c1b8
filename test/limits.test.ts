// The size limits of src/ (tools/limits.mjs): no file over 300 lines, no class over 150,
// no function over 60 (the lines of a multi-line template literal, SQL or Lua, are text).
// A piece that grows past one fails here, naming it; and the tool itself is checked on a
// planted file, so a tool that saw nothing could not pass.
import { execFile } from 'node:child_process'
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, describe, expect, it } from 'vitest'

const run = promisify(execFile)
const root = new URL('..', import.meta.url).pathname
const tool = join(root, 'tools/limits.mjs')

async function limits(cwd: string): Promise<{ code: number; stdout: string }> {
  try {
    const { stdout } = await run(process.execPath, [tool], { cwd })
    return { code: 0, stdout }
  } catch (error) {
    const failed = error as { code: number; stdout: string }
    return { code: failed.code, stdout: failed.stdout }
  }
}

describe('size limits of src/', () => {
  const planted = mkdtempSync(join(tmpdir(), 'idem-limits-'))
  afterAll(() => rmSync(planted, { recursive: true, force: true }))

  it('every file, class and function of src/ is within its limit', async () => {
    const { code, stdout } = await limits(root)
    expect(stdout.trim().split('\n').slice(0, -1), 'over the limits').toEqual([])
    expect(code).toBe(0)
  })

  it('the tool names a function over 60 lines, a class over 150 and a file over 300, and counts a template literal as text', async () => {
    mkdirSync(join(planted, 'src'))
    const lines = (n: number) => Array.from({ length: n }, (_, i) => `  const v${i} = ${i}`).join('\n')
    const sql = Array.from({ length: 80 }, (_, i) => `SELECT ${i}`).join('\n')
    writeFileSync(
      join(planted, 'src/planted.ts'),
      [
        `export function long(): void {\n${lines(61)}\n}`,
        `export function text(): string {\n  return \`\n${sql}\n\`\n}`,
        `export class Big {\n  m(): void {\n${lines(50)}\n  }\n  n(): void {\n${lines(50)}\n  }\n  o(): void {\n${lines(50)}\n  }\n}`,
        '',
      ].join('\n\n'),
    )
    const { code, stdout } = await limits(planted)
    expect(code).toBe(1)
    expect(stdout).toContain('function src/planted.ts:long 63')
    expect(stdout).not.toContain(':text ')
    expect(stdout).toMatch(/class src\/planted\.ts:Big 1[56]\d/)
    expect(stdout).toMatch(/file src\/planted\.ts 3\d\d/)
  })
})
