// A pg.Pool without an 'error' listener crashes the process when an idle connection is
// dropped. The Postgres stores warn once about such a pool, and every example and doc
// snippet that makes a pool attaches one.
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { idemEvents, type IdemEvent } from '../../src/core/events.js'
import { leasedPostgresStore, postgresStore } from '../../src/stores/postgres/index.js'

const root = new URL('../..', import.meta.url).pathname
// No connection is opened: the check is made when the store is created.
const newPool = (): pg.Pool => new pg.Pool({ connectionString: 'postgres://postgres@127.0.0.1:1/test', connectionTimeoutMillis: 1_000 })

describe('a pool without an error listener', () => {
  const warnings: IdemEvent[] = []
  const stop = idemEvents.subscribe((event) => event.type === 'warning' && event.code === 'pool-without-error-listener' && warnings.push(event))
  afterEach(() => {
    warnings.length = 0
  })
  afterAll(stop)

  for (const [name, make] of [
    ['postgresStore', (pool: pg.Pool) => postgresStore({ pool })],
    ['leasedPostgresStore', (pool: pg.Pool) => leasedPostgresStore({ pool })],
  ] as const) {
    it(`${name} warns once, on the event stream, naming itself and what to do`, () => {
      const pool = newPool()
      make(pool)
      make(pool)
      expect(warnings).toEqual([
        expect.objectContaining({ type: 'warning', code: 'pool-without-error-listener', source: name, message: expect.stringContaining("pool.on('error'") }),
      ])
    })

    it(`${name} says nothing about a pool with a listener`, () => {
      const pool = newPool()
      pool.on('error', () => {})
      make(pool)
      expect(warnings).toEqual([])
    })
  }

  it('goes to the console when nobody listens to the event stream', () => {
    stop()
    const printed: unknown[] = []
    const original = console.warn
    console.warn = (...args: unknown[]) => void printed.push(args.join(' '))
    try {
      postgresStore({ pool: newPool() })
    } finally {
      console.warn = original
    }
    expect(printed).toEqual([expect.stringContaining("has no 'error' listener")])
  })
})

/** The files a user copies a pool from: the examples and the docs. */
function sources(): string[] {
  const examples = readdirSync(join(root, 'examples')).filter((f) => f.endsWith('.mjs') || f.endsWith('.ts')).map((f) => `examples/${f}`)
  const docs = readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)
  return [...examples, 'examples/claims-intake/database.mjs', ...docs, 'README.md']
}

describe('every example and doc snippet that makes a pool attaches an error listener', () => {
  it('names each pool and calls .on("error", …) on it', () => {
    const missing: string[] = []
    let pools = 0
    for (const file of sources()) {
      // A snippet-context comment declares, for the compile check of test/docs/snippets.test.ts, what a
      // fragment takes from around it; a reader never sees it, so it is not a pool anyone copies.
      const text = readFileSync(join(root, file), 'utf8').replace(/<!-- snippet-context[\s\S]*?-->/g, '')
      for (const match of text.matchAll(/new pg\.Pool\(/g)) {
        pools++
        const before = text.slice(text.lastIndexOf('\n', match.index) + 1, match.index)
        const name = /(?:const|let)\s+(\w+)\s*=\s*$/.exec(before)?.[1]
        if (name === undefined || !new RegExp(`\\b${name}\\.on\\(\\s*'error'`).test(text)) missing.push(`${file}: ${before.trim()}new pg.Pool(…)`)
      }
    }
    expect(missing).toEqual([])
    // The scan found the pools it is about (the examples' and the docs').
    expect(pools).toBeGreaterThanOrEqual(5)
  })
})
