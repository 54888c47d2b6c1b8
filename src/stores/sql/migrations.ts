import type { MigrationStatements } from './dialect.js'
import type { Plan, StoreDriver } from './driver.js'

/** What a migration did: the version it found, the version now, and the migrations it applied. */
export interface MigrateResult {
  from: number
  to: number
  applied: number[]
}

/**
 * Brings idem's tables to the dialect's latest version, as a plan the driver runs in
 * one exclusive transaction: the preamble (a lock, so two instances migrating at once
 * take turns), the version found, each pending version's statements and its row.
 * Refuses a schema newer than this build knows.
 * @param who how the error names the tables (`schema billing`, `the SQLite schema`)
 */
export function* migrationPlan(migrations: MigrationStatements, who: string): Plan<MigrateResult> {
  yield migrations.begin
  for (const statement of migrations.preamble) yield statement
  const [row] = yield migrations.current
  const from = Number((row as { version: number | string } | undefined)?.version ?? 0)
  if (from > migrations.latest) throw new Error(`idem: ${who} is at version ${from}, newer than this idem (${migrations.latest}); upgrade idem`)
  const applied: number[] = []
  for (const { migration, statements } of migrations.pending(from)) {
    for (const statement of statements) yield statement
    applied.push(migration.version)
  }
  yield migrations.end
  return { from, to: migrations.latest, applied }
}

/**
 * Every statement that brings the tables from version `from` to the latest, in one
 * transaction, recording each version as `migrate()` does, so a `migrate()` after the
 * script has been applied by hand finds them current. What `idem sql` prints.
 */
export function migrationScript(migrations: MigrationStatements, from = 0): string[] {
  return [
    migrations.begin,
    ...migrations.preamble,
    ...migrations.pending(from).flatMap(({ migration, statements }) => [`-- version ${migration.version}: ${migration.description}`, ...statements]),
    migrations.end,
  ]
}

/** What an operator asks of the migrations (`StoreOperator['migrations']`), apart from `migrate`. */
export function migrationOperator(
  migrations: MigrationStatements,
  driver: Pick<StoreDriver<unknown, boolean | Promise<boolean>>, 'query' | 'transaction'>,
  tables: () => Promise<Set<string>>,
): { latest: number; current(): Promise<number>; script(from?: number): string[]; unrecordedTables(): Promise<string[]>; baseline(version: number): Promise<void> } {
  return {
    latest: migrations.latest,
    async current() {
      if (!(await tables()).has('idem_migrations')) return 0
      const { rows } = await driver.query({ text: migrations.current, values: [] })
      return Number((rows[0] as { version: number | string }).version)
    },
    script: (from) => migrationScript(migrations, from),
    async unrecordedTables() {
      return [...(await tables())].filter((name) => name !== 'idem_migrations')
    },
    // All or none: the version table and the rows, in one transaction.
    baseline: async (version) => void (await driver.transaction(migrations.baseline(version).map((text) => ({ text, values: [] })))),
  }
}
