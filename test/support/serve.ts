import { spawn, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'

const root = new URL('../..', import.meta.url).pathname

/** Starts `npm run serve` (examples/claims-intake/serve.mjs) with `env`; resolves once it listens. */
export async function startServe(env: Record<string, string>): Promise<{ child: ChildProcess; base: string }> {
  const child = spawn(process.execPath, [join(root, 'examples/claims-intake/serve.mjs')], {
    env: { ...process.env, PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const base = await new Promise<string>((resolve, reject) => {
    let out = ''
    child.stderr!.on('data', (chunk) => (out += chunk))
    child.stdout!.on('data', (chunk) => {
      out += chunk
      const match = /listening on (http:\/\/\S+)/.exec(out)
      if (match) resolve(match[1]!)
    })
    child.on('exit', (code) => reject(new Error(`serve exited with ${code}: ${out}`)))
  })
  return { child, base }
}
