// Round trips counted on a mysql2 pool, for bench:mysql.
/**
 * Counts the commands (round trips: a query, a multi-statement query, a CALL, a ping)
 * mysql2 sends on `pool`'s connections, those opened from now on (make it before the
 * pool's first query). `during(work)` resolves with what `work` sent: `total`, and
 * `describe(calls)`, each command's kind and first words per call.
 */
export function commandCounter(pool) {
  let sent
  pool.pool.on('connection', (connection) => {
    const add = connection.addCommand.bind(connection)
    connection.addCommand = (command) => {
      if (sent !== undefined) {
        const what = `${command.constructor.name}${command.sql === undefined ? '' : ` ${shape(command.sql)}`}`
        sent.set(what, (sent.get(what) ?? 0) + 1)
      }
      return add(command)
    }
  })
  return {
    async during(work) {
      const counted = (sent = new Map())
      try {
        await work()
      } finally {
        sent = undefined
      }
      return {
        total: [...counted.values()].reduce((a, b) => a + b, 0),
        describe: (calls) => [...counted].map(([what, n]) => `${(n / calls).toFixed(2)} × ${what}`).join('; '),
      }
    },
  }
}

/** A statement's text without its values, shortened: what it is, the same for every call. */
function shape(sql) {
  return sql
    .replace(/'(?:[^'\\]|\\.)*'/g, '?')
    .replace(/\b\d+\b/g, '?')
    .replace(/\s+/g, ' ')
    .slice(0, 60)
}

