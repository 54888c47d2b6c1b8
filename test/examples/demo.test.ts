import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, describe, expect, it } from 'vitest'
import { patience } from '../support/patience.js'

const run = promisify(execFile)
const root = new URL('../..', import.meta.url).pathname
const demo = join(root, 'examples/claims-intake/demo.mjs')

describe('npm start (the claims-intake demo)', () => {
  const data = mkdtempSync(join(tmpdir(), 'idem-demo-'))
  afterAll(() => rmSync(data, { recursive: true, force: true }))

  it('runs naive and idem on the same faulty traffic, and exits 0 with every invariant holding', async () => {
    const { stdout } = await run(process.execPath, [demo, '--orders', '80', '--claims', '2', '--seed', '7', '--data', data], { timeout: patience(120_000) })
    const row = (label: string) => {
      const line = stdout.split('\n').find((l) => l.startsWith(label))
      expect(line, `the table has a row "${label}"`).toBeDefined()
      const [naive, idem, expected] = line!.slice(label.length).trim().split(/\s+/)
      return { naive: Number(naive), idem: Number(idem), expected }
    }
    expect(row('order rows in the database')).toMatchObject({ idem: 80, expected: '80' })
    expect(row('charges at the payment provider').idem).toBe(80)
    expect(row('charges at the payment provider').naive).toBeGreaterThan(80) // the faults were real
    expect(row('chunks indexed for claim-1')).toMatchObject({ idem: 58, expected: '58' })
    expect(row('chunks indexed for claim-1').naive).toBeGreaterThanOrEqual(116)
    expect(row('"claim received" emails for claim-1').idem).toBe(1)
    expect(row('summaries stored for claim-1').idem).toBe(1)
    expect(row('duplicate rows found by reconcile').idem).toBe(0)
    expect(row('duplicate rows found by reconcile').naive).toBeGreaterThan(0)
    expect(row('orders answered by a replay (the stored 201)').idem).toBeGreaterThan(0)
    // The provider's webhooks, delivered again when their answer was lost, and one forged.
    expect(row("payment rows from the provider's webhooks")).toMatchObject({ idem: 80, expected: '80' })
    expect(row("payment rows from the provider's webhooks").naive).toBeGreaterThan(row('charges at the payment provider').naive)
    expect(row('forged webhook deliveries recorded')).toMatchObject({ naive: 1, idem: 0, expected: '0' })
    expect(stdout).toContain('ok   one payment row per charge, however often its webhook came')
    expect(stdout).toContain('ok   the forged webhook refused (401), nothing recorded')
    // Each count says what it counts: orders above, requests here.
    expect(stdout).toMatch(/\d+ client retries \(requests sent again, over all orders\)/)
    expect(stdout).not.toContain('FAIL')
    expect(stdout).toContain('Every intent took effect exactly once under idem.')
  }, patience(150_000))

  it('explains itself with --help and refuses bad options with exit code 2', async () => {
    const { stdout } = await run(process.execPath, [demo, '--help'])
    expect(stdout).toContain('Usage: npm start -- [options]')
    await expect(run(process.execPath, [demo, '--drop', '2'])).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining('--drop must be a probability') })
    const unknown = run(process.execPath, [demo, '--foo'])
    await expect(unknown).rejects.toMatchObject({ code: 2, stderr: expect.stringMatching(/^Unknown option '--foo'\.\n\nUsage: npm start/) })
    await expect(unknown).rejects.toMatchObject({ stderr: expect.not.stringContaining('    at ') })
  })

  it('under faults so heavy that clients give up, says so instead of reporting an idem failure', async () => {
    const { stdout } = await run(
      process.execPath,
      [demo, '--orders', '40', '--claims', '2', '--drop', '0.97', '--crash', '0.9', '--seed', '3', '--data', join(data, 'heavy')],
      { timeout: patience(120_000) },
    )
    expect(stdout).not.toContain('FAIL')
    expect(stdout).not.toContain('An idem invariant failed')
    expect(stdout).toMatch(/No intent took effect twice under idem\. \d+ of 42 clients gave up after 40 attempts without an answer/)
    const rows = stdout.split('\n').find((l) => l.startsWith('duplicate rows found by reconcile'))!
    expect(rows.trim().split(/\s+/).at(-2)).toBe('0')
  }, patience(150_000))
})
