// bench:peers's output: per framework, the throughput table (req/s and the server's CPU
// per request, medians with min–max) and the correctness table (the scenarios); the RATIO
// lines, by throughput and by CPU; with PEERS_PROFILE, each server's CPU by part and idem's
// own JavaScript against the peers'.
import { median, ratio } from '../support.mjs'
import { splitProfile, isIdem } from './profile-split.mjs'
import { CLIENTS, FRAMEWORKS, PROFILE, ROUNDS } from './settings.mjs'
import { AGAINST_PEERS, labelOf, VARIANTS } from './variants.mjs'

/** Median, min and max of a mode's rounds: req/s and CPU µs per request. */
function summary(samples) {
  if (samples.length === 0) return undefined
  const rates = samples.map((sample) => sample.rate)
  const cpus = samples.map((sample) => sample.cpu).filter((cpu) => cpu !== undefined)
  return {
    rate: median(rates),
    min: Math.min(...rates),
    max: Math.max(...rates),
    cpu: cpus.length === 0 ? undefined : median(cpus),
    cpuMin: cpus.length === 0 ? undefined : Math.min(...cpus),
    cpuMax: cpus.length === 0 ? undefined : Math.max(...cpus),
    p50: median(samples.map((sample) => sample.p50)),
    p99: median(samples.map((sample) => sample.p99)),
    bad: samples.reduce((sum, sample) => sum + sample.bad, 0),
    statuses: samples.reduce((all, sample) => {
      for (const [status, { count }] of Object.entries(sample.statuses)) all[status] = (all[status] ?? 0) + count
      return all
    }, {}),
  }
}

const pad = (text, width) => String(text).padEnd(width)
const lpad = (text, width) => String(text).padStart(width)
const whole = (value) => (value === undefined ? '—' : value.toFixed(0))
const LABEL = 50
/** The rows of a framework, in the order they ran. */
const rowsOf = (framework, servers) => servers.filter((server) => server.framework === framework).sort((a, b) => a.order - b.order)

/** Per framework: the throughput table and the correctness table. */
export function printTables(servers) {
  for (const framework of FRAMEWORKS) {
    const rows = rowsOf(framework, servers)
    if (rows.length === 0) continue
    const baseline = summary(servers.find((server) => server.framework === framework && server.variant === 'unprotected').samples.fresh)
    console.log(`\n${framework}: throughput (median of ${ROUNDS} round(s), min–max; × = against ${framework} unprotected; CPU µs = the server process's CPU per request)`)
    console.log(
      `  ${pad('variant', LABEL)}${lpad('fresh req/s', 12)} ${pad('(min–max)', 13)}${lpad('p50', 5)}${lpad('p99', 6)}${lpad('×', 6)}${lpad('CPU µs', 8)} ${pad('(min–max)', 12)}` +
        `${lpad('replay req/s', 13)} ${pad('(min–max)', 13)}${lpad('×', 6)}${lpad('CPU µs', 8)}  replay rows`,
    )
    for (const server of rows) {
      const fresh = summary(server.samples.fresh)
      const replay = summary(server.samples.replay)
      const bad = [fresh, replay].filter((s) => s?.bad > 0).map((s) => JSON.stringify(s.statuses))
      console.log(
        `  ${pad(labelOf(server), LABEL)}${lpad(whole(fresh.rate), 12)} ${pad(`(${whole(fresh.min)}–${whole(fresh.max)})`, 13)}` +
          `${lpad(fresh.p50, 5)}${lpad(fresh.p99, 6)}${lpad((fresh.rate / baseline.rate).toFixed(2), 6)}${lpad(whole(fresh.cpu), 8)} ${pad(`(${whole(fresh.cpuMin)}–${whole(fresh.cpuMax)})`, 12)}` +
          (replay === undefined
            ? `${lpad('—', 13)}`
            : `${lpad(whole(replay.rate), 13)} ${pad(`(${whole(replay.min)}–${whole(replay.max)})`, 13)}${lpad((replay.rate / baseline.rate).toFixed(2), 6)}${lpad(whole(replay.cpu), 8)}  ` +
              `${server.replayRows === 0 ? 'none' : `${server.replayRows} added`}`) +
          (bad.length > 0 ? `   non-2xx or errors: ${bad.join(' ')}` : ''),
      )
    }
    console.log(`${framework}: correctness`)
    console.log(`  ${pad('variant', LABEL)}${pad('races: runs/key', 17)}${pad('rows/key', 10)}${pad('statuses', 26)}${pad('other body', 23)}crash after INSERT, restart, retry`)
    for (const server of rows) {
      const { runs, rows: raceRows, statuses } = server.race
      console.log(`  ${pad(labelOf(server), LABEL)}${pad(runs, 17)}${pad(raceRows, 10)}${pad(statuses, 26)}${pad(server.otherBody, 23)}${server.crash}`)
    }
  }
  console.log('\n(p50/p99 in ms; crash: the statuses the retries got and when the key answered, in s from the SIGKILL, and the rows left)')
}

/** `<name>.throughput` (idem's req/s / the other's) and `<name>.cpu` (the other's CPU µs per request / idem's): ≥ 1 is idem ahead. */
function ratios(name, idem, { fastest, cheapest }, into) {
  const throughput = idem.rate / fastest.rate
  const cpu = cheapest.cpu / idem.cpu
  ratio(`${name}.throughput`, throughput)
  ratio(`${name}.cpu`, cpu)
  into?.throughput.push(throughput)
  into?.cpu.push(cpu)
}

/** The RATIO lines: per framework (and Redis client), then the headlines, the lowest of each over them. */
export function printRatios(servers) {
  const fresh = (framework, variant, client) => {
    const server = servers.find((s) => s.framework === framework && s.variant === variant && s.client === client)
    return server === undefined ? undefined : { server, ...summary(server.samples.fresh) }
  }
  const headlines = Object.fromEntries(['idem_pg_vs_hand_written', ...AGAINST_PEERS.map((variant) => `${variant}_vs_best_peer`)].map((name) => [name, { throughput: [], cpu: [] }]))
  for (const framework of FRAMEWORKS) {
    const hand = fresh(framework, 'hand_written')
    const idemPg = fresh(framework, 'idem_pg')
    if (hand !== undefined && idemPg !== undefined) ratios(`peers.${framework}.idem_pg_vs_hand_written`, idemPg, { fastest: hand, cheapest: hand }, headlines.idem_pg_vs_hand_written)
    const peers = Object.keys(VARIANTS)
      .filter((variant) => VARIANTS[variant].peer)
      .map((variant) => fresh(framework, variant))
      .filter((peer) => peer !== undefined)
    if (peers.length === 0) continue
    const best = { fastest: peers.reduce((a, b) => (b.rate > a.rate ? b : a)), cheapest: peers.reduce((a, b) => (b.cpu < a.cpu ? b : a)) }
    console.log(
      `(${framework}: the fastest peer, fresh, is ${labelOf(best.fastest.server)}: ${whole(best.fastest.rate)} req/s; ` +
        `the one with the least server CPU per fresh request is ${labelOf(best.cheapest.server)}: ${whole(best.cheapest.cpu)} µs)`,
    )
    for (const variant of AGAINST_PEERS) {
      for (const client of CLIENTS) {
        const name = `peers.${framework}.${client}.${variant}_vs_best_peer`
        const idem = fresh(framework, variant, client)
        if (idem !== undefined) ratios(name, idem, best, headlines[`${variant}_vs_best_peer`])
      }
    }
  }
  const over = `${FRAMEWORKS.join(', ')}; clients ${CLIENTS.join(', ')}`
  console.log(`(the headlines: the lowest of the lines above, over ${over})`)
  for (const [name, { throughput, cpu }] of Object.entries(headlines)) {
    if (throughput.length === 0) continue
    ratio(`peers.${name}.throughput`, Math.min(...throughput))
    ratio(`peers.${name}.cpu`, Math.min(...cpu))
  }
}

/** Each server's CPU per fresh request by part (from its profiles), then idem's own JavaScript against the peers' own. */
export function printProfiles(servers) {
  console.log(`\nserver CPU per fresh request by part, from a CPU profile of each server over its measured runs (${PROFILE}):`)
  for (const server of servers) {
    const requests = server.samples.fresh.reduce((sum, sample) => sum + sample.operations, 0)
    const micros = new Map()
    for (const file of server.profiles) for (const [part, value] of splitProfile(file)) micros.set(part, (micros.get(part) ?? 0) + value / requests)
    const idem = [...micros].filter(([part]) => isIdem(part))
    const idemTotal = idem.reduce((sum, [, value]) => sum + value, 0)
    const others = [...micros].filter(([part]) => !isIdem(part))
    const parts = [...others, ...(idemTotal > 0 ? [["idem's own JS", idemTotal]] : [])].sort((a, b) => b[1] - a[1])
    const total = [...micros.values()].reduce((sum, value) => sum + value, 0)
    const split = idem.map(([part, value]) => `${part.slice('idem '.length)} ${whole(value)}`).join(', ')
    const described = parts.map(([part, value]) => `${part} ${whole(value)}${part === "idem's own JS" ? ` [${split}]` : ''}`)
    console.log(`  ${server.slug}: ${whole(total)} µs (${described.join(', ')})`)
    server.ownJs = { idem: idemTotal, peer: micros.get('peer library') ?? 0 }
  }
  for (const framework of FRAMEWORKS) {
    const peers = servers.filter((server) => server.framework === framework && VARIANTS[server.variant].peer)
    if (peers.length === 0) continue
    const least = peers.reduce((a, b) => (b.ownJs.peer < a.ownJs.peer ? b : a))
    console.log(`(${framework}: the peers' own JavaScript per fresh request: ${peers.map((peer) => `${labelOf(peer)} ${whole(peer.ownJs.peer)} µs`).join('; ')}; the least is the target)`)
    const values = []
    for (const client of CLIENTS) {
      const idem = servers.find((server) => server.framework === framework && server.variant === 'idem_redis' && server.client === client)
      if (idem === undefined) continue
      console.log(`(${framework}.${client}: idem's own JavaScript per fresh request, Redis as written: ${whole(idem.ownJs.idem)} µs)`)
      values.push(least.ownJs.peer / idem.ownJs.idem)
      ratio(`peers.${framework}.${client}.idem_js_vs_peer_js`, values.at(-1))
    }
    if (values.length > 0) ratio(`peers.${framework}.idem_js_vs_peer_js`, Math.min(...values))
  }
}
