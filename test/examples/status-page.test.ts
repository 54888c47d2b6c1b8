import type { ChildProcess } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { chromium, type Browser } from 'playwright-core'
import { Webhook } from 'standardwebhooks'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { promValue } from '../support/metrics.js'
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

// The payment provider's webhook secret, given to the service so that this test can sign as the provider.
const WEBHOOK_SECRET = `whsec_${randomBytes(24).toString('base64')}`

/** What the page derives from /metrics, computed here from the same text. */
function expectedTotals(text: string) {
  const webhooks = (signature: string, status: string) => promValue(text, 'idem_webhook_deliveries_total', { consumer: 'payment-webhooks', signature, status }) ?? 0
  const http = (outcome: string) => promValue(text, 'idem_http_requests_total', { outcome }) ?? 0
  const outcomes = ['fresh', 'replayed', 'not-stored', 'missing-key', 'invalid-key', 'body-too-large', 'mismatch', 'in-flight', 'lease-lost', 'store-unavailable', 'error', 'unprotected']
  const requests = outcomes.reduce((n, o) => n + http(o), 0)
  return {
    requests,
    protected: requests - http('unprotected'),
    replayed: http('replayed'),
    conflicts: http('mismatch'),
    badKeys: http('missing-key') + http('invalid-key'),
    unavailable: http('store-unavailable'),
    // Every inbox's: the worker's redeliveries and the payment webhooks delivered again.
    inboxDuplicates: ['claims-intake-worker', 'payment-webhooks'].reduce((n, consumer) => n + (promValue(text, 'idem_inbox_messages_total', { consumer, status: 'duplicate' }) ?? 0), 0),
    duplicates: Math.max(promValue(text, 'idem_reconcile_duplicate_ratio', { table: 'summaries' }) ?? 0, promValue(text, 'idem_reconcile_duplicate_ratio', { table: 'chunks' }) ?? 0),
    outboxLag: promValue(text, 'idem_outbox_lag_seconds') ?? 0,
    webhooksProcessed: webhooks('verified', 'processed'),
    webhookDuplicates: webhooks('verified', 'duplicate'),
    webhooksRefused: webhooks('refused', 'refused'),
  }
}

describe.skipIf(!haveChromium)('the status page in headless Chromium', () => {
  const data = mkdtempSync(join(tmpdir(), 'idem-status-'))
  let child: ChildProcess
  let base: string
  let browser: Browser
  beforeAll(async () => {
    ;({ child, base } = await startServe({ CLAIMS_DB: join(data, 'status.db'), DATABASE_URL: '', RECONCILE_EVERY_MS: '500', FAULT_CRASH_BEFORE_ACK: '0.5', PAYMENT_WEBHOOK_SECRET: WEBHOOK_SECRET }))
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-quic', '--no-first-run', '--disable-component-update', '--disable-sync'],
    })
  })
  afterAll(async () => {
    await browser?.close()
    child?.kill('SIGTERM')
    rmSync(data, { recursive: true, force: true })
  })

  it('shows the three signals against their alert levels, 400s, 503s, inbox duplicates, outbox lag and payment webhooks (new, duplicate, refused), as /metrics says at that moment', async () => {
    const page = await browser.newPage({ viewport: { width: 1200, height: 760 } })
    await page.goto(base)
    await page.waitForFunction(() => Number(document.body.dataset.updates ?? 0) >= 1)
    expect(await page.textContent('[data-testid=requests]')).toBe('0')

    const post = (path: string, key: string | undefined, body: unknown) =>
      fetch(`${base}${path}`, {
        method: 'POST',
        headers: { authorization: 'Bearer acct_ui', 'content-type': 'application/json', ...(key === undefined ? {} : { 'idempotency-key': `"${key}"` }) },
        body: JSON.stringify(body),
      })
    const order = (amount: number) => ({ amount, currency: 'eur', customer: 'ui' })
    for (let i = 0; i < 12; i++) expect((await post('/orders', `ui-${i}`, order(100))).status).toBe(201)
    for (let i = 0; i < 5; i++) expect((await post('/orders', `ui-${i}`, order(100))).headers.get('idempotent-replayed')).toBe('true')
    for (let i = 0; i < 3; i++) expect((await post('/orders', `ui-${i}`, order(999))).status).toBe(422)
    for (let i = 0; i < 2; i++) expect((await post('/orders', undefined, order(100))).status).toBe(400)
    const document_ = Array.from({ length: 200 }, (_, i) => `w${i}`).join(' ')
    expect((await post('/claims', 'claim-ui-1', { claimId: 'claim-ui-1', document: document_ })).status).toBe(202)
    // Payment webhooks signed with the standardwebhooks package: two events, one delivered
    // again, and one signed with another secret.
    const webhook = (id: string, secret: string) => {
      const body = JSON.stringify({ type: 'charge.succeeded', data: { chargeId: `ch_${id}`, amount: 100, currency: 'eur' } })
      const headers = { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': String(Math.floor(Date.now() / 1000)) }
      return fetch(`${base}/webhooks/payments`, { method: 'POST', headers: { ...headers, 'webhook-signature': new Webhook(secret).sign(id, new Date(), body) }, body })
    }
    expect((await webhook('msg_ui_1', WEBHOOK_SECRET)).status).toBe(200)
    expect((await webhook('msg_ui_2', WEBHOOK_SECRET)).status).toBe(200)
    expect((await webhook('msg_ui_1', WEBHOOK_SECRET)).headers.get('idempotent-replayed')).toBe('true')
    expect((await webhook('msg_ui_3', `whsec_${randomBytes(24).toString('base64')}`)).status).toBe(401)

    // Wait for the worker to settle and the page to draw what /metrics says, then
    // screenshot, and check /metrics still says the same: the picture is of that moment.
    let metrics = ''
    let settled = false
    for (let attempt = 0; attempt < 60 && !settled; attempt++) {
      metrics = await (await fetch(`${base}/metrics`)).text()
      const want = expectedTotals(metrics)
      if (want.requests !== 23) {
        await new Promise((r) => setTimeout(r, 250))
        continue
      }
      try {
        await page.waitForFunction((w) => document.body.dataset.totals === w, JSON.stringify(want), { timeout: 2_000 })
      } catch {
        continue // the page sampled between two changes; sample again
      }
      mkdirSync(join(root, 'test-artifacts'), { recursive: true })
      await page.screenshot({ path: join(root, 'test-artifacts/status-page.png'), fullPage: true })
      const after = await (await fetch(`${base}/metrics`)).text()
      settled = JSON.stringify(expectedTotals(after)) === JSON.stringify(want) && (await page.evaluate(() => document.body.dataset.totals)) === JSON.stringify(want)
    }
    expect(settled, 'the page showed what /metrics said, and it held while the screenshot was taken').toBe(true)
    const want = expectedTotals(metrics)

    // The headline numbers are /metrics' own series.
    expect(await page.textContent('[data-testid=requests]')).toBe(String(want.requests))
    expect(want).toMatchObject({ requests: 23, replayed: 5, conflicts: 3, badKeys: 2, unavailable: 0 })
    expect(await page.textContent('[data-testid=replayRate]')).toBe(`${((want.replayed / want.protected) * 100).toFixed(1)} %`)
    expect(await page.textContent('[data-testid=badKeys]')).toBe('2')
    expect(await page.textContent('[data-testid=unavailable]')).toBe('0')
    expect(await page.textContent('[data-testid=inboxDuplicates]')).toBe(String(want.inboxDuplicates))
    expect(await page.textContent('[data-testid=duplicates]')).toBe('0.0 %')
    expect(await page.textContent('[data-testid=outboxLag]')).toBe(`${want.outboxLag.toFixed(2)} s`)
    expect(want).toMatchObject({ webhooksProcessed: 2, webhookDuplicates: 1, webhooksRefused: 1 })
    expect(await page.textContent('[data-testid=webhooks]')).toBe('2 · 1 · 1')
    expect(await page.getAttribute('[data-card=webhooks]', 'class')).toContain('alert')
    // Against their levels: 5 replays of 23 is above 2 %, and 422s are above 0; reconcile found no duplicate.
    expect(await page.getAttribute('[data-card=replayRate]', 'class')).toContain('alert')
    expect(await page.getAttribute('[data-card=duplicates]', 'class')).not.toContain('alert')

    // The charts drew their lines, the alert levels dashed in red, and a time axis.
    const pixels = await page.evaluate(() => {
      const count = (id: string, test: (r: number, g: number, b: number) => boolean) => {
        const canvas = document.querySelector(`canvas[data-series=${id}]`) as HTMLCanvasElement
        const { data } = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height)
        let n = 0
        for (let i = 0; i < data.length; i += 4) if (data[i + 3]! > 0 && test(data[i]!, data[i + 1]!, data[i + 2]!)) n++
        return n
      }
      return {
        requests: count('requestsRate', (r, _g, b) => r < 90 && b > 180),
        replayLevel: count('replayRate', (r, g, b) => r > 200 && g < 100 && b < 120),
        axisText: count('replayRate', (r, g, b) => Math.abs(r - 0x7a) < 30 && Math.abs(g - 0x85) < 30 && Math.abs(b - 0x92) < 30),
      }
    })
    expect(pixels.requests).toBeGreaterThan(20)
    expect(pixels.replayLevel).toBeGreaterThan(20)
    expect(pixels.axisText).toBeGreaterThan(20)
  })

  it('paints the last minute at once when opened on a running service: full charts, apart axis labels', async () => {
    // The service keeps a sample of /metrics a second; wait until it has a few since the
    // traffic above, as an operator opening the page on a running service finds them.
    let recent: unknown[] = []
    for (let attempt = 0; attempt < 40 && recent.length < 4; attempt++) {
      const response = await fetch(`${base}/metrics/recent`)
      recent = response.ok ? ((await response.json()) as unknown[]) : []
      if (recent.length < 4) await new Promise((r) => setTimeout(r, 250))
    }
    expect(recent.length, '/metrics/recent keeps the samples of the last minute').toBeGreaterThanOrEqual(4)

    const page = await browser.newPage({ viewport: { width: 1200, height: 760 } })
    await page.goto(base)
    await page.waitForFunction(() => Number(document.body.dataset.updates ?? 0) >= 1)
    mkdirSync(join(root, 'test-artifacts'), { recursive: true })
    await page.screenshot({ path: join(root, 'test-artifacts/status-page-first-paint.png'), fullPage: true })
    const first = await page.evaluate(() =>
      [...document.querySelectorAll('canvas[data-series]')].map((canvas: HTMLCanvasElement) => ({
        series: canvas.dataset.series as string,
        points: Number(canvas.dataset.points),
        ticks: JSON.parse(canvas.dataset.ticks ?? '[]') as Array<[number, number]>,
      })),
    )
    for (const chart of first) {
      // The first paint already has the minute before it: a line, not a dot.
      expect(chart.points, `${chart.series}: points at the first paint`).toBeGreaterThanOrEqual(5)
      // The time axis labels (their [left, right] in pixels) do not overlap.
      for (let i = 1; i < chart.ticks.length; i++) expect(chart.ticks[i]![0], `${chart.series}: tick ${i} clear of tick ${i - 1}`).toBeGreaterThan(chart.ticks[i - 1]![1])
      expect(chart.ticks.length, `${chart.series}: time labels`).toBeGreaterThanOrEqual(2)
    }
    expect(await page.textContent('[data-testid=requests]')).toBe('23')
    expect(await page.textContent('[data-testid=replayRate]')).not.toBe('–')
  })
})
