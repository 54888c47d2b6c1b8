// The conformance backends on Node, over idem's sources; the SQLite one on better-sqlite3.
import Database from 'better-sqlite3'
import { createLeasedIdem } from '../../../src/index.js'
import { dynamodbStore } from '../../../src/stores/dynamodb/index.js'
import { postgresStore } from '../../../src/stores/postgres/index.js'
import { redisStore } from '../../../src/stores/redis/index.js'
import { sqliteStore } from '../../../src/stores/sqlite/index.js'
import { dynamoBackendOf, postgresBackendOf, redisBackendOf, sqliteBackendOf, type DynamoKit, type StoreKit } from './backend-kinds.js'

export type { Backend, Protection } from './backend-kinds.js'

/** idem's own store constructors, from `src/`. */
export const sourceKit: StoreKit & DynamoKit = { postgresStore, sqliteStore, redisStore, dynamodbStore, createLeasedIdem }

/** Postgres in a schema of its own; undefined when Postgres is unreachable outside CI. */
export const postgresBackend = (prefix: string) => postgresBackendOf(sourceKit, prefix)

/** SQLite (better-sqlite3) in a temporary file of its own, in WAL mode. */
export const sqliteBackend = (prefix: string) => sqliteBackendOf(sourceKit, prefix, (file) => new Database(file))

/** Redis (the leased engine) in a key prefix of its own; undefined when Redis is unreachable outside CI. */
export const redisBackend = (label: string) => redisBackendOf(sourceKit, label)

/** DynamoDB Local (the leased engine) in a table of its own; undefined when it is unreachable outside CI. */
export const dynamoBackend = (label: string) => dynamoBackendOf(sourceKit, label)
