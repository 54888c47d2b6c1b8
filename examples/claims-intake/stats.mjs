// Per-second counts for the status page's charts, kept for the last two minutes.

const SERIES = ['requests', 'replayed', 'inFlight', 'mismatch']
const KIND_TO_SERIES = { request: 'requests', replayed: 'replayed', 'in-flight': 'inFlight', mismatch: 'mismatch' }

export function createStats({ seconds = 120 } = {}) {
  const totals = Object.fromEntries(SERIES.map((name) => [name, 0]))
  const buckets = new Map()
  return {
    /** Counts one engine outcome kind, or 'request' for a request. */
    record(kind) {
      const name = KIND_TO_SERIES[kind]
      if (name === undefined) return
      totals[name]++
      const second = Math.floor(Date.now() / 1000)
      let bucket = buckets.get(second)
      if (bucket === undefined) buckets.set(second, (bucket = Object.fromEntries(SERIES.map((n) => [n, 0]))))
      bucket[name]++
      for (const old of buckets.keys()) if (old < second - seconds) buckets.delete(old)
    },
    snapshot() {
      const now = Math.floor(Date.now() / 1000)
      const series = []
      for (let s = now - 59; s <= now; s++) series.push({ t: s, ...(buckets.get(s) ?? Object.fromEntries(SERIES.map((n) => [n, 0]))) })
      return { totals: { ...totals }, series }
    },
  }
}
