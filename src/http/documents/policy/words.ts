// The page's words: how the policy writes codes, lists, header names, durations and sizes.

export function code(text: string): string {
  return `\`${text}\``
}

export function list(items: readonly string[], conjunction = 'and'): string {
  if (items.length <= 1) return items.join('')
  return `${items.slice(0, -1).join(', ')} ${conjunction} ${items[items.length - 1]}`
}

export function headerCase(name: string): string {
  if (name === 'etag') return 'ETag'
  return name.replace(/(^|-)([a-z])/g, (_, dash: string, letter: string) => dash + letter.toUpperCase())
}

/** A duration in words, as the policy page states it (`24 hours`, `2 days`). */
export function duration(ms: number): string {
  const units: Array<[number, string]> = [
    [24 * 3_600_000, 'day'],
    [3_600_000, 'hour'],
    [60_000, 'minute'],
    [1_000, 'second'],
  ]
  for (const [size, unit] of units) {
    // 24 hours reads better than 1 day for the default, and 36 hours than 1.5 days.
    if (ms % size === 0 && (unit !== 'day' || ms >= 2 * size)) return plural(ms / size, unit)
  }
  return plural(ms, 'millisecond')
}

/** A size in words, as the policy page states it (`1 MiB`, `512 bytes`). */
export function bytes(n: number): string {
  if (n >= 1024 * 1024 && n % (1024 * 1024) === 0) return `${n / (1024 * 1024)} MiB`
  if (n >= 1024 && n % 1024 === 0) return `${n / 1024} KiB`
  return plural(n, 'byte')
}

function plural(n: number, unit: string): string {
  return `${n} ${unit}${n === 1 ? '' : 's'}`
}
