// Shared by the benches: timing loops and the RATIO lines runs are compared by.

/**
 * Runs `op` from `concurrency` loops for `ms` milliseconds.
 * @returns operations per second
 */
export async function throughput(op, { concurrency, ms }) {
  let done = 0
  let i = 0
  const until = performance.now() + ms
  const loop = async () => {
    while (performance.now() < until) {
      await op(i++)
      done++
    }
  }
  const started = performance.now()
  await Promise.all(Array.from({ length: concurrency }, loop))
  return done / ((performance.now() - started) / 1000)
}

/** Median of the values. */
export function median(values) {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

/**
 * Measures every variant `rounds` times, interleaved so drift in the machine's load hits
 * all of them alike, and returns each variant's median. Every other round runs in
 * reverse order (a b c, c b a, …): whatever a run leaves behind (a table grown, a
 * vacuum started, a queue being deleted) then weighs on every position alike, instead
 * of always on the variant measured last.
 */
export async function interleaved(variants, rounds, measure) {
  const samples = Object.fromEntries(Object.keys(variants).map((name) => [name, []]))
  const forward = Object.entries(variants)
  const backward = [...forward].reverse()
  for (let round = 0; round < rounds; round++) {
    for (const [name, variant] of round % 2 === 0 ? forward : backward) samples[name].push(await measure(variant, name))
  }
  return Object.fromEntries(Object.entries(samples).map(([name, values]) => [name, median(values)]))
}

export function ratio(name, value, digits = 2) {
  console.log(`RATIO ${name} ${value.toFixed(digits)}`)
}
