import type { ChildProcess } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium, type Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startServe } from '../support/serve.js'

const root = new URL('../..', import.meta.url).pathname
// The page functions below run in the browser, where these exist; Node's types lack the DOM.
declare const document: any // eslint-disable-line @typescript-eslint/no-explicit-any
type HTMLCanvasElement = any // eslint-disable-line @typescript-eslint/no-explicit-any
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
const haveChromium = existsSync(CHROMIUM)
if (!haveChromium) {
  if (process.env.CI) throw new Error(`Chromium is required in CI at ${CHROMIUM} (apt-get install chromium)`)
  console.warn(`SKIPPED: no Chromium at ${CHROMIUM}`)
}

describe.skipIf(!haveChromium)('the status page in headless Chromium', () => {
  const data = mkdtempSync(join(tmpdir(), 'idem-status-'))
  let child: ChildProcess
  let base: string
  let browser: Browser
  beforeAll(async () => {
    ;({ child, base } = await startServe({ CLAIMS_DB: join(data, 'status.db'), DATABASE_URL: '' }))
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    })
  })
  afterAll(async () => {
    await browser?.close()
    child?.kill('SIGTERM')
    rmSync(data, { recursive: true, force: true })
  })

  it('shows live charts that move when traffic arrives, and saves a screenshot', async () => {
    const page = await browser.newPage({ viewport: { width: 1100, height: 600 } })
    await page.goto(base)
    await page.waitForFunction(() => Number(document.body.dataset.updates ?? 0) >= 1)
    expect(await page.textContent('[data-testid=total-requests]')).toBe('0')

    const order = (key: string, amount: number) =>
      fetch(`${base}/orders`, {
        method: 'POST',
        headers: { authorization: 'Bearer acct_ui', 'idempotency-key': `"${key}"`, 'content-type': 'application/json' },
        body: JSON.stringify({ amount, currency: 'eur', customer: 'ui' }),
      })
    for (let i = 0; i < 12; i++) expect((await order(`ui-${i}`, 100)).status).toBe(201)
    for (let i = 0; i < 5; i++) expect((await order(`ui-${i}`, 100)).headers.get('idempotent-replayed')).toBe('true')
    for (let i = 0; i < 3; i++) expect((await order(`ui-${i}`, 999)).status).toBe(422)

    await page.waitForFunction(() => document.querySelector('[data-testid=total-requests]')?.textContent === '20', undefined, { timeout: 10_000 })
    expect(await page.textContent('[data-testid=total-replayed]')).toBe('5')
    expect(await page.textContent('[data-testid=total-mismatch]')).toBe('3')
    // The requests chart has drawn a line: some pixels carry its colour.
    const coloured = await page.evaluate(() => {
      const canvas = document.getElementById('chart-requests') as HTMLCanvasElement
      const { data } = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height)
      let n = 0
      for (let i = 0; i < data.length; i += 4) if (data[i]! < 90 && data[i + 2]! > 180 && data[i + 3]! > 0) n++
      return n
    })
    expect(coloured).toBeGreaterThan(20)
    mkdirSync(join(root, 'test-artifacts'), { recursive: true })
    await page.screenshot({ path: join(root, 'test-artifacts/status-page.png'), fullPage: true })
  })
})
