import type { Result } from '../../sql/statement.js'
import { classifyMysqlError } from './errors.js'
import type { MysqlExecutor } from './types.js'

/**
 * What mysql2's `query` answered, as the protocol's `Result`: a SELECT's rows; a
 * write's affected rows (none read), as is a CALL's that selected nothing; a CALL's
 * first result set (mysql2 answers a list of them, and the call's own header last).
 * Rows are objects: a pool made with `rowsAsArray` or `nestTables` is not supported.
 */
export function resultOf(answer: unknown): Result {
  if (Array.isArray(answer)) {
    if (answer.length > 0 && Array.isArray(answer[0])) {
      const rows = answer[0] as unknown[]
      return { rows, rowCount: rows.length }
    }
    return { rows: answer, rowCount: answer.length }
  }
  const affected = (answer as { affectedRows?: unknown } | null)?.affectedRows
  return { rows: [], rowCount: typeof affected === 'number' ? affected : null }
}

/** Runs one statement on `executor`, its errors classified (errors.ts). */
export async function run(executor: MysqlExecutor, text: string, values: readonly unknown[] = []): Promise<Result> {
  try {
    const [answer] = await executor.query(text, values as unknown[])
    return resultOf(answer)
  } catch (error) {
    throw classifyMysqlError(error)
  }
}
