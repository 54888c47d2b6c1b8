// bench:peers's correctness scenarios, run once per server after the throughput rounds:
//   races       RACE_KEYS keys × RACE_COPIES simultaneous identical requests: how often
//               the route ran per key, the rows it left, the statuses answered
//   other body  a used key with another body: the status (and whether the route ran)
//   crash       the server SIGKILLed right after the route's INSERT, restarted, and the
//               request retried until it is answered with something other than 409/5xx:
//               the statuses, the time from the crash until the key was usable, the rows
// And the row counts the throughput runs read (what replays added).
import http from 'node:http'
import { CRASH_WAIT_S, HEADERS, ORDER, PREFIX, RACE_COPIES, RACE_KEYS, RUN, SCHEMA, sleep } from './settings.mjs'

/** The highest row ids, to count what a run added. */
export async function lastIds(db) {
  const { rows } = await db.query(`SELECT (SELECT coalesce(max(id), 0) FROM "${SCHEMA}".orders) AS orders, (SELECT coalesce(max(id), 0) FROM "${SCHEMA}".orders_keyed) AS keyed`)
  return rows[0]
}
export async function rowsSince(db, since) {
  const { rows } = await db.query(
    `SELECT (SELECT count(*) FROM "${SCHEMA}".orders WHERE id > $1) + (SELECT count(*) FROM "${SCHEMA}".orders_keyed WHERE id > $2) AS added`,
    [since.orders, since.keyed],
  )
  return Number(rows[0].added)
}
/** Rows added since `since`, by the ref in their body. */
export async function rowsByRef(db, since) {
  const { rows } = await db.query(
    `SELECT ref, sum(n)::int AS n FROM (` +
      `SELECT body->>'ref' AS ref, count(*) AS n FROM "${SCHEMA}".orders WHERE id > $1 GROUP BY 1 UNION ALL ` +
      `SELECT body->>'ref' AS ref, count(*) AS n FROM "${SCHEMA}".orders_keyed WHERE id > $2 GROUP BY 1) r GROUP BY ref`,
    [since.orders, since.keyed],
  )
  return Object.fromEntries(rows.map((row) => [row.ref, row.n]))
}


function post(port, { key, body, ref }, agent) {
  return new Promise((resolve, reject) => {
    const headers = { ...HEADERS, 'content-length': Buffer.byteLength(body), 'x-bench-ref': ref }
    if (key !== undefined) headers['idempotency-key'] = key
    const request = http.request({ host: '127.0.0.1', port, path: '/orders', method: 'POST', agent, headers, timeout: 30_000 }, (response) => {
      response.resume()
      response.on('end', () => resolve(response.statusCode))
    })
    request.on('timeout', () => request.destroy(new Error('timed out')))
    request.on('error', reject)
    request.end(body)
  })
}
function get(port, path, agent) {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path, agent, timeout: 10_000 }, (response) => response.resume().on('end', resolve)).on('error', reject)
  })
}
const countStatuses = (statuses) =>
  Object.entries(statuses.reduce((all, status) => ({ ...all, [status]: (all[status] ?? 0) + 1 }), {}))
    .sort()
    .map(([status, n]) => `${status}×${n}`)
    .join(' ')
const span = (values) => (values.length === 0 ? '—' : Math.min(...values) === Math.max(...values) ? `${values[0]}` : `${Math.min(...values)}–${Math.max(...values)}`)

/** RACE_KEYS keys, each sent RACE_COPIES times at once over connections opened beforehand. */
export async function race(server, db) {
  const { port } = server.process
  const agent = new http.Agent({ keepAlive: true, maxSockets: RACE_COPIES })
  const since = await lastIds(db)
  const statuses = []
  const refs = []
  try {
    for (let k = 0; k < RACE_KEYS; k++) {
      // Open (or reopen) every connection first, so that the copies leave together.
      await Promise.all(Array.from({ length: RACE_COPIES }, () => get(port, '/health', agent)))
      const ref = `${RUN}.race.${server.slug}.${k}`
      const request = { key: `${PREFIX}race.${server.slug}.${k}`, body: JSON.stringify({ ...ORDER, ref }), ref }
      refs.push(request)
      const answers = await Promise.allSettled(Array.from({ length: RACE_COPIES }, () => post(port, request, agent)))
      statuses.push(...answers.map((answer) => (answer.status === 'fulfilled' ? answer.value : 'error')))
    }
  } finally {
    agent.destroy()
  }
  await sleep(200) // writes a library makes after answering (express-idempotency stores then)
  const runs = await server.process.runs()
  const rows = await rowsByRef(db, since)
  return {
    runs: span(refs.map(({ ref }) => runs[ref] ?? 0)),
    rows: span(refs.map(({ ref }) => rows[ref] ?? 0)),
    statuses: countStatuses(statuses),
    first: refs[0],
  }
}

/** The first race key again, with another body. */
export async function otherBody(server, db) {
  const since = await lastIds(db)
  const ref = `${server.race.first.ref}.other`
  const status = await post(server.process.port, { key: server.race.first.key, body: JSON.stringify({ ...ORDER, amount: 9999, ref }), ref }).catch(() => 'error')
  const ran = (await server.process.runs())[ref] ?? 0
  return `${status}${ran > 0 ? ' (ran)' : ''}${(await rowsSince(db, since)) > 0 ? ', row added' : ''}`
}

/**
 * The server restarted with PEERS_CRASH_REF, so that it SIGKILLs itself right after the
 * INSERT of this request, and the same request retried on a fresh process of the same
 * server (the restart; started beforehand, so that its start-up is not counted) every
 * 250 ms until it is answered with neither 409 nor 5xx, for up to CRASH_WAIT_S.
 * `startServer(server, env)` forks a process of the server.
 */
export async function crash(server, db, startServer) {
  const ref = `${RUN}.crash.${server.slug}`
  const request = { key: `${PREFIX}crash.${server.slug}`, body: JSON.stringify({ ...ORDER, ref }), ref }
  await server.process.stop()
  const [crashing, restarted] = await Promise.all([startServer(server, { PEERS_CRASH_REF: ref }), startServer(server)])
  server.process = restarted
  const since = await lastIds(db)
  const first = await post(crashing.port, request).then(
    (status) => `answered ${status}, did not crash; `,
    () => '',
  )
  const crashedAt = performance.now()
  if (first === '') await crashing.exited
  else await crashing.stop()
  const seen = []
  let usableS
  while ((performance.now() - crashedAt) / 1000 < CRASH_WAIT_S) {
    const status = await post(restarted.port, request).catch(() => 'error')
    if (seen.at(-1) !== status) seen.push(status)
    if (typeof status === 'number' && status !== 409 && status < 500) {
      usableS = (performance.now() - crashedAt) / 1000
      break
    }
    await sleep(250)
  }
  const rows = (await rowsByRef(db, since))[ref] ?? 0
  const statuses = seen.join(' → ')
  const retry = usableS === undefined ? `${statuses} for > ${CRASH_WAIT_S} s` : `${statuses} at ${usableS.toFixed(1)} s`
  return `${first}${retry}, ${rows} row${rows === 1 ? '' : 's'}`
}

