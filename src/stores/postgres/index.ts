export { postgresStore, type PostgresStore, type PostgresStoreOptions } from './store.js'
export { migratePostgres, type MigrateResult } from './migrate.js'
export { migrations, SCHEMA_VERSION, type Migration } from './migrations.js'
export type { PgClient, PgExecutor, PgPool, PgPoolClient, PgQueryResult } from './types.js'
export { postgresOperator, type PostgresOperatorOptions } from './operator.js'
export { postgresMigrationScript } from './operations.js'
export { leasedPostgresStore, type LeasedPostgresStore, type LeasedPostgresStoreOptions } from './leased.js'
export {
  fromDrizzle,
  fromKysely,
  fromPg,
  type DrizzleExecutor,
  type DrizzleSql,
  type KyselyCompiledQuery,
  type KyselyExecutor,
} from './executors.js'
