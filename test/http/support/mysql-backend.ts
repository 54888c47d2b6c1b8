// The conformance table's MySQL backend (MariaDB here), over idem's sources: a database of its own.
import mysql from 'mysql2/promise'
import { mysqlStore, type MysqlExecutor } from '../../../src/stores/mysql/index.js'
import { testDatabase } from '../../support/mysql.js'
import type { Backend } from './backend-kinds.js'

/** MySQL in a database of its own; undefined when the server is unreachable outside CI. */
export async function mysqlBackend(prefix: string): Promise<Backend<MysqlExecutor> | undefined> {
  const db = await testDatabase(prefix, 12)
  if (db === undefined) return undefined
  const { pool } = db
  const store = mysqlStore({ pool })
  await store.migrate()
  await pool.query('CREATE TABLE effects (id VARCHAR(300) NOT NULL) ENGINE=InnoDB')
  // Nothing listens on port 1: connecting is refused at once.
  const down = mysql.createPool({ uri: 'mysql://root@127.0.0.1:1/test', connectTimeout: 2_000 })
  const downStore = mysqlStore({ pool: down })
  const count = async (text: string, values: unknown[] = []): Promise<number> => Number(((await pool.query(text, values))[0] as { n: number }[])[0]!.n)
  return {
    name: 'mysql',
    protection: (state) => ({ store: state === 'down' ? downStore : store }),
    rollsBack: true,
    async writeEffect(tx, id) {
      await tx.query('INSERT INTO effects (id) VALUES (?)', [id])
    },
    countEffects: (id) => count('SELECT COUNT(*) AS n FROM effects WHERE id = ?', [id]),
    // A claim's placeholder (fingerprint '') is no stored key.
    countKeys: (key) =>
      key === undefined
        ? count("SELECT COUNT(*) AS n FROM idem_keys WHERE fingerprint <> ''")
        : count("SELECT COUNT(*) AS n FROM idem_keys WHERE `key` = ? AND fingerprint <> ''", [key]),
    async close() {
      await down.end()
      await db.drop()
    },
  }
}
