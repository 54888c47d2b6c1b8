// The webhook receiver's example on each front end, which docs/webhooks.md shows whole with
// what it prints (the Shopify and Slack guides show theirs too): each runs as shown,
// Express on 5 and on 4 and Koa on 3 and on 2 (through the loader that resolves them to
// the older installs), and prints the lines the page shows: a signed delivery handled,
// the provider's redelivery a duplicate, a tampered one refused, the handler run once.
// NestJS's example, a module with a controller, is run on both platforms with deliveries
// signed by Stripe's SDK.
import { execFile } from 'node:child_process'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { promisify } from 'node:util'
import type { INestApplication } from '@nestjs/common'
import { NestFactory } from '@nestjs/core'
import { FastifyAdapter } from '@nestjs/platform-fastify'
import Stripe from 'stripe'
import { beforeAll, describe, expect, it } from 'vitest'
import { compiledExamples, expectPageShows, expectPageShowsOutput, page, root, runExample } from '../docs/support.js'

// The TypeScript examples compile once, before the tests that run them (a minute on a loaded machine).
beforeAll(async () => {
  await compiledExamples()
}, 300_000)

const PAGE = 'docs/webhooks.md'
const OLDER_MAJORS = ['--import', join(root, 'test/support/older-majors-loader.mjs')]

interface Example {
  readonly file: string
  /** The majors it runs on, each with the node arguments that pick it. */
  readonly runs: ReadonlyArray<readonly [string, readonly string[]]>
  /** The guide that shows it too. */
  readonly guide?: string
  readonly prints: readonly string[]
}

const examples: readonly Example[] = [
  {
    file: 'examples/webhooks/express.ts',
    runs: [['Express 5', []], ['Express 4', OLDER_MAJORS]],
    guide: 'docs/guides/webhooks-shopify.md',
    prints: [
      'signed 200 {"received":true,"id":"98880550-7158-44d4-b7cd-2c97c8a091b5"}',
      'other subscription 200 {"received":true,"id":"98880550-7158-44d4-b7cd-2c97c8a091b5","duplicate":true}',
      'tampered 401 no-matching-signature',
      'handled: 98880550-7158-44d4-b7cd-2c97c8a091b5 orders/create 15.00',
    ],
  },
  {
    file: 'examples/webhooks/fastify.ts',
    runs: [['Fastify 5', []]],
    prints: [
      'signed 200 {"received":true,"id":"evt_3PtQ1"}',
      'retried 200 {"received":true,"id":"evt_3PtQ1","duplicate":true}',
      'tampered 401 no-matching-signature',
      'handled: evt_3PtQ1 payment_intent.succeeded',
    ],
  },
  {
    file: 'examples/webhooks/hono.ts',
    runs: [['Hono 4', []]],
    prints: [
      'signed 200 {"received":true,"id":"msg_2KWPBgLlAfxdpx2AI54pPJ85f4W"}',
      'retried 200 {"received":true,"id":"msg_2KWPBgLlAfxdpx2AI54pPJ85f4W","duplicate":true}',
      'tampered 401 no-matching-signature',
      'handled: msg_2KWPBgLlAfxdpx2AI54pPJ85f4W user.created (72 bytes)',
    ],
  },
  {
    file: 'examples/webhooks/koa.ts',
    runs: [['Koa 3', []], ['Koa 2', OLDER_MAJORS]],
    prints: [
      'signed 200 {"received":true,"id":"72d3162e-cc78-11e3-81ab-4c9367dc0958"}',
      'redelivered 200 {"received":true,"id":"72d3162e-cc78-11e3-81ab-4c9367dc0958","duplicate":true}',
      'tampered 401 no-matching-signature',
      'handled: 72d3162e-cc78-11e3-81ab-4c9367dc0958 push',
    ],
  },
  {
    file: 'examples/webhooks/lambda.ts',
    runs: [['Lambda, Function URL', []]],
    guide: 'docs/guides/webhooks-slack.md',
    prints: [
      'url_verification 200 {"challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}',
      'signed 200 {"received":true,"id":"Ev0PV52K25"}',
      'retried 200 {"received":true,"id":"Ev0PV52K25","duplicate":true}',
      'tampered 401 no-matching-signature',
      'handled: Ev0PV52K25 app_mention via a1b2c3d4.lambda-url.us-east-1.on.aws',
    ],
  },
]

describe(`the webhook receiver on each front end, as ${PAGE} shows it`, () => {
  for (const { file, runs, guide, prints } of examples) {
    for (const [major, loader] of runs) {
      it(`${file} on ${major}: handled once, the redelivery a duplicate, the tampered one 401, as the page shows`, async () => {
        for (const shownIn of [PAGE, ...(guide === undefined ? [] : [guide])]) expectPageShows(shownIn, file)
        // The tampered delivery also writes its failure line on stderr.
        const stdout = await runExample(file, loader, Array<string>(prints.filter((line) => / 401 /.test(line)).length).fill('invalid-signature'))
        expect(stdout.trim().split('\n')).toEqual(prints)
        for (const shownIn of [PAGE, ...(guide === undefined ? [] : [guide])]) expectPageShowsOutput(shownIn, stdout)
      })
    }
  }

  it('the loader resolves `express` to Express 4', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [...OLDER_MAJORS, '--input-type=module', '-e', "console.log(import.meta.resolve('express'))"], { cwd: root })
    expect(stdout.trim()).toMatch(/\/node_modules\/express4\/index\.js$/)
  })
})

describe(`examples/nestjs/webhooks.ts, shown in ${PAGE}`, () => {
  const secret = 'whsec_test_5a1e0c0ffee'
  const stripe = new Stripe('sk_test_unused')
  const payload = JSON.stringify({ id: 'evt_3PtQ1', object: 'event', type: 'payment_intent.succeeded' })

  it('is shown verbatim', () => {
    expect(page(PAGE).includes(page('examples/nestjs/webhooks.ts').trim()), `${PAGE} must show examples/nestjs/webhooks.ts verbatim`).toBe(true)
  })

  for (const platform of ['express', 'fastify'] as const) {
    it(`on the ${platform} platform: the event handled once, Stripe's retry a duplicate, a tampered one 401`, async () => {
      const { AppModule, Payments, createApp } = await import('../../examples/nestjs/webhooks.js')
      const app: INestApplication = platform === 'express' ? await createApp() : await NestFactory.create(AppModule, new FastifyAdapter(), { rawBody: true })
      app.useLogger(false)
      try {
        await app.listen(0, '127.0.0.1')
        const { port } = (app.getHttpServer() as { address(): AddressInfo }).address()
        const now = Math.floor(Date.now() / 1000)
        const deliver = (body: string, timestamp: number) =>
          fetch(`http://127.0.0.1:${port}/webhooks/stripe`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'stripe-signature': stripe.webhooks.generateTestHeaderString({ payload, secret, timestamp }) },
            body,
          })
        const first = await deliver(payload, now - 60)
        expect([first.status, await first.json()]).toEqual([200, { received: true, id: 'evt_3PtQ1' }])
        const retry = await deliver(payload, now)
        expect([retry.status, retry.headers.get('idempotent-replayed'), await retry.json()]).toEqual([200, 'true', { received: true, id: 'evt_3PtQ1', duplicate: true }])
        const tampered = await deliver(payload.replace('succeeded', 'canceled'), now)
        expect([tampered.status, ((await tampered.json()) as { check: string }).check]).toEqual([401, 'no-matching-signature'])
        expect(app.get(Payments).succeeded).toEqual(['evt_3PtQ1'])
      } finally {
        await app.close()
      }
    })
  }
})
