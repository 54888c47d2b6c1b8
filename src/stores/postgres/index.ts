export { postgresStore, type PostgresStore, type PostgresStoreOptions } from './store.js'
export { migratePostgres, postgresMigrationScript, type MigrateResult } from './migrate.js'
export { migrations, SCHEMA_VERSION, type Migration } from './dialect/migrations.js'
export type { PgClient, PgConnectCallback, PgExecutor, PgPool, PgPoolClient, PgQueryResult } from './driver/types.js'
export { postgresDialect } from './dialect/data-dialect.js'
export { postgresOperator, type PostgresOperatorOptions } from './operator.js'
export { leasedPostgresStore, type LeasedPostgresStore, type LeasedPostgresStoreOptions } from './leased.js'
export {
  fromDrizzle,
  fromKysely,
  fromPg,
  type DrizzleExecutor,
} from './driver/executors.js'
export type { DrizzleSql, KyselyCompiledQuery, KyselyExecutor } from '../sql/orm-seams.js'
