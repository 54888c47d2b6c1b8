import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { expect } from 'vitest'
import { main } from '../../src/cli/idem.js'

export const root = new URL('../..', import.meta.url).pathname
const cli = join(root, 'dist/cli/idem.js')

/** What one run of `idem` did. */
export interface Ran {
  code: number
  stdout: string
  stderr: string
}

/** Runs the built `idem` as a user would, never throwing: the exit code is part of the answer. */
export function idem(args: string[], options: { cwd?: string; env?: Record<string, string>; node?: string[] } = {}): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(process.execPath, [...(options.node ?? []), cli, ...args], { cwd: options.cwd, env: { ...process.env, ...options.env }, timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr })
    })
  })
}

/** The same in-process, with a terminal's progress line captured. */
export async function inProcess(args: string[], tty = false) {
  const out: string[] = []
  const err: string[] = []
  const progress: (string | undefined)[] = []
  const code = await main(args, { out: (l) => out.push(l), err: (l) => err.push(l), progress: tty ? (l) => progress.push(l) : undefined })
  return { code, out, err, progress }
}

export const noStack = (ran: Ran) => expect(ran.stderr, 'no stack trace').not.toMatch(/\n\s+at /)
