export { mysqlStore, type MysqlStore, type MysqlStoreOptions } from './store.js'
export type { MigrateResult } from '../sql/migrations.js'
export type { PruneOptions } from '../sql/prune.js'
export { mysqlMigrations, mysqlMigrationScript, MYSQL_SCHEMA_VERSION, type MysqlMigration } from './dialect/migrations.js'
export type { MysqlExecutor, MysqlPool, MysqlPoolConnection } from './driver/types.js'
export { mysqlOperator, type MysqlOperatorOptions } from './operator.js'
export {
  fromDrizzle,
  fromKysely,
  type DrizzleMysqlExecutor,
} from './driver/executors.js'
export type { DrizzleSql, KyselyCompiledQuery, KyselyExecutor } from '../sql/orm-seams.js'
