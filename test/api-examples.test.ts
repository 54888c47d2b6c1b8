// Every @example in the public declarations type-checks against the built package: an
// editor shows these on hover, so one that drifts from the API teaches users code that
// does not compile (issue 34: four outbox examples called createDispatcher without its
// required store).
//
// Each example becomes the body of an async function in a file of its own, which
// imports the example's names from the package the way a user would: from the entry
// point that declares the example, else from the first entry point that exports the
// name, else from the third-party package it belongs to (THIRD_PARTY). What is left
// (the user's own `pool`, `store`, `req`…) is declared `any`, so the check is about
// idem's API: a missing or misspelt option, a wrong argument, a function or type idem
// does not export by that name. Type-checked with the repository's tsc, as ESM
// (nodenext), after `npm run build`.
import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, describe, expect, it } from 'vitest'
import { entryPoints, exportedNames, root, text } from './support/declarations.js'

const run = promisify(execFile)

/** Names the examples take from the frameworks and drivers users already have. */
const THIRD_PARTY: Readonly<Record<string, string>> = {
  Hono: "import { Hono } from 'hono'",
  express: "import express from 'express'",
  Koa: "import Koa from 'koa'",
  Fastify: "import Fastify from 'fastify'",
  fastify: "import fastify from 'fastify'",
  pg: "import pg from 'pg'",
  Pool: "import { Pool } from 'pg'",
  Redis: "import { Redis } from 'ioredis'",
  Database: "import Database from 'better-sqlite3'",
  DynamoDBClient: "import { DynamoDBClient } from '@aws-sdk/client-dynamodb'",
  SQSClient: "import { SQSClient } from '@aws-sdk/client-sqs'",
  jetstream: "import { jetstream } from '@nats-io/jetstream'",
  Kafka: "import { Kafka } from 'kafkajs'",
  Worker: "import { Worker } from 'bullmq'",
  amqp: "import amqp from 'amqplib'",
  metrics: "import { metrics } from '@opentelemetry/api'",
  Module: "import { Module } from '@nestjs/common'",
  Controller: "import { Controller } from '@nestjs/common'",
  Post: "import { Post } from '@nestjs/common'",
  Put: "import { Put } from '@nestjs/common'",
  Body: "import { Body } from '@nestjs/common'",
  Req: "import { Req } from '@nestjs/common'",
  UseInterceptors: "import { UseInterceptors } from '@nestjs/common'",
  NestFactory: "import { NestFactory } from '@nestjs/core'",
  Kysely: "import { Kysely } from 'kysely'",
  drizzle: "import { drizzle } from 'drizzle-orm/node-postgres'",
}

/**
 * The user's values that the front ends' examples assume are Postgres-backed, typed so,
 * so that the transaction an example writes through is checked too (a store's own
 * examples use their own store); any other free name is `any`.
 */
const USER_VALUES: Readonly<Record<string, string>> = {
  store: "import('idem/postgres').PostgresStore",
  inbox: "import('idem/queue').Inbox<import('idem/postgres').PgClient, any>",
}

const STORE_ENTRIES = new Set(['idem/memory', 'idem/sqlite', 'idem/redis', 'idem/dynamodb', 'idem/testing'])

interface Example {
  /** Where the example is: the declaration file and line, as an editor shows it. */
  readonly at: string
  /** The entry point whose declarations hold it. */
  readonly entry: string
  readonly code: string
}

/** Declaration files an entry reaches through its relative imports and re-exports. */
function reachable(file: string, seen: Set<string>): void {
  if (seen.has(file)) return
  seen.add(file)
  for (const match of text(file).matchAll(/\bfrom\s+'(\.{1,2}\/[^']+)\.js'|\bimport\('(\.{1,2}\/[^']+)\.js'\)/g)) {
    reachable(resolve(dirname(file), `${match[1] ?? match[2]}.d.ts`), seen)
  }
}

/** The `@example` blocks of one declaration file's doc comments. */
function examplesIn(file: string, entry: string): Example[] {
  const source = text(file)
  const found: Example[] = []
  for (const comment of source.matchAll(/\/\*\*[\s\S]*?\*\//g)) {
    // `\@` is JSDoc's escape for an @ that starts a line of code (a decorator).
    const lines = comment[0].split('\n').map((line) => line.replace(/^\s*\/?\*\*?\/?\s?/, '').replace(/\s*\*\/$/, '').replace(/^(\s*)\\@/, '$1@'))
    for (let i = 0; i < lines.length; i++) {
      const tag = /^@example\b ?(.*)$/.exec(lines[i]!)
      if (tag === null) continue
      const code = [tag[1]!]
      for (let j = i + 1; j < lines.length && !lines[j]!.startsWith('@'); j++) code.push(lines[j]!)
      const line = source.slice(0, comment.index).split('\n').length + i
      found.push({ at: `${relative(root, file)}:${line}`, entry, code: code.join('\n').trim() })
    }
  }
  return found
}

const examples: Example[] = []
const owner = new Map<string, string>()
for (const { specifier, file } of entryPoints) {
  const files = new Set<string>()
  reachable(file, files)
  for (const reached of files) if (!owner.has(reached)) owner.set(reached, specifier)
}
for (const [file, entry] of owner) examples.push(...examplesIn(file, entry))

const exportsOf = new Map(entryPoints.map(({ specifier, file }) => [specifier, new Set(exportedNames(file))]))

/** Where a name the example uses but does not declare comes from. */
function importFor(name: string, entry: string): string | undefined {
  if (exportsOf.get(entry)!.has(name)) return `import { ${name} } from '${entry}'`
  for (const [specifier, names] of exportsOf) if (names.has(name)) return `import { ${name} } from '${specifier}'`
  return THIRD_PARTY[name]
}

/** The example as a module: its own imports on top, the rest in an async function. */
function moduleOf(example: Example, free: ReadonlySet<string>): string {
  const lines = example.code.split('\n')
  const imports = lines.filter((line) => /^import\s/.test(line))
  const body = lines.filter((line) => !/^import\s/.test(line)).map((line) => line.replace(/^export\s+/, ''))
  const declared = []
  for (const name of free) {
    const found = importFor(name, example.entry)
    if (found !== undefined) declared.push(found)
    // The user's own variables and types: anything goes, so only idem's API is checked.
    else if (USER_VALUES[name] !== undefined && !STORE_ENTRIES.has(example.entry)) declared.push(`declare let ${name}: ${USER_VALUES[name]}`)
    else declared.push(`declare let ${name}: any`, `type ${name}<_A = any, _B = any, _C = any> = any`)
  }
  return [...imports, ...declared, 'export async function example() {', ...body, '}', ''].join('\n')
}

const NOT_FOUND = /error TS(?:2304|2552|2580|2503|2582|2591|2593|2693|18004): (?:Cannot find (?:name|namespace)|No value exists in scope for the shorthand property) '([^']+)'/

describe('the @example of every public declaration', () => {
  const dir = mkdtempSync(join(root, 'test', '.examples-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('finds the examples in the built declarations (npm run build first)', () => {
    expect(examples.length).toBeGreaterThan(100)
  })

  it('type-checks every one against the built package', async () => {
    const files = examples.map((_, i) => `example-${String(i).padStart(3, '0')}.ts`)
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          lib: ['ES2023'],
          types: ['node'],
          strict: true,
          // The example's own parameters, typed by a call on the user's `any` values.
          noImplicitAny: false,
          noEmit: true,
          skipLibCheck: true,
          experimentalDecorators: true,
          emitDecoratorMetadata: true,
        },
        files,
      }),
    )
    const tsc = join(root, 'node_modules', '.bin', 'tsc')
    const check = async (): Promise<string[]> => {
      const result = await run(tsc, ['-p', dir, '--pretty', 'false'], { cwd: dir, maxBuffer: 16 * 1024 * 1024 }).catch((error: { stdout: string }) => error)
      return result.stdout.split('\n').filter((line) => line.includes('error TS'))
    }
    // First pass: which names each example uses without declaring them.
    const free = examples.map(() => new Set<string>())
    examples.forEach((example, i) => writeFileSync(join(dir, files[i]!), moduleOf(example, free[i]!)))
    for (const line of await check()) {
      const name = NOT_FOUND.exec(line)?.[1]
      const index = files.findIndex((file) => line.startsWith(file))
      if (name !== undefined && index !== -1) free[index]!.add(name)
    }
    examples.forEach((example, i) => writeFileSync(join(dir, files[i]!), moduleOf(example, free[i]!)))
    const errors = await check()
    const report = errors.map((line) => {
      const index = files.findIndex((file) => line.startsWith(file))
      const example = examples[index]
      return example === undefined ? line : `${example.at} (${example.entry}): ${line.slice(line.indexOf('error'))}\n${readFileSync(join(dir, files[index]!), 'utf8')}`
    })
    expect(report, `${errors.length} errors in the @example blocks`).toEqual([])
  }, 120_000)
})
