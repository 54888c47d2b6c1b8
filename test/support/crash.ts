import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const script = fileURLToPath(new URL('../fixtures/crash-in-function.mjs', import.meta.url))

/**
 * Runs the crash fixture until it reports its write, then kills it with SIGKILL.
 * Resolves once the process is gone.
 */
export async function killAfterWrite(args: string[]): Promise<void> {
  const child = spawn(process.execPath, [script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (chunk) => (stderr += chunk))
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) => child.on('exit', (code, signal) => resolve(signal ?? code)))
  await new Promise<void>((resolve, reject) => {
    let out = ''
    child.stdout.on('data', (chunk) => {
      out += chunk
      if (out.includes('WROTE')) resolve()
    })
    child.on('exit', (code) => reject(new Error(`the crash fixture exited (${code}) before writing: ${stderr}`)))
  })
  child.kill('SIGKILL')
  const how = await exited
  if (how !== 'SIGKILL') throw new Error(`expected the fixture to die of SIGKILL, it ended with ${how}`)
}
