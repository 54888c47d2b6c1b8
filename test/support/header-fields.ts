// Header fields for the property tests of the stored form (#44): values with spaces and
// tabs around them, empty ones, Latin-1, Unicode text, control characters and lone
// surrogates, drawn from the repertoire each platform lets a route answer with; and the
// stored form's rule, restated here as the tests' own statement of what a replay carries.
import fc from 'fast-check'

const CONTROL = /[\x00-\x08\x0a-\x1f\x7f]/

/**
 * What a replay carries of a value a route answered: the value without the spaces and
 * tabs around it, a lone surrogate as U+FFFD; null when it holds a control character
 * other than HTAB (the field is left out of the stored form).
 */
export function replayedValue(value: string): string | null {
  const trimmed = value.replace(/^[\t ]+|[\t ]+$/g, '')
  return CONTROL.test(trimmed) ? null : trimmed.toWellFormed()
}

const char = (min: number, max: number): fc.Arbitrary<string> => fc.integer({ min, max }).map((code) => String.fromCharCode(code))
const printable = char(0x21, 0x7e)
const space = fc.constantFrom(' ', '\t')
const latin1 = char(0x80, 0xff)
const unicode = fc.oneof(fc.constantFrom('报', '告', '€', '😀', '\u2028', '\ufeff'), fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }))
// What Node refuses but a Web Headers holds: control characters but NUL, CR and LF.
const headersControl = fc.constantFrom('\x01', '\x08', '\x1f', '\x7f')
const anyControl = fc.constantFrom('\r', '\n', '\r\n', '\0', '\x01', '\x1b', '\x7f')
const surrogate = fc.constantFrom('\ud800', '\udbff', '\udc00')

/** The characters a value may hold, by who answers it. */
export const VALUE_UNITS = {
  /** What Node's `setHeader` accepts: `[\t\x20-\x7e\x80-\xff]`. */
  node: fc.oneof({ arbitrary: printable, weight: 8 }, { arbitrary: space, weight: 2 }, { arbitrary: latin1, weight: 2 }),
  /** What a Web `Headers` accepts: ByteStrings without NUL, CR or LF. */
  web: fc.oneof({ arbitrary: printable, weight: 8 }, { arbitrary: space, weight: 2 }, { arbitrary: latin1, weight: 2 }, { arbitrary: headersControl, weight: 1 }),
  /** Whatever a Lambda function returns: any string. */
  lambda: fc.oneof(
    { arbitrary: printable, weight: 8 },
    { arbitrary: space, weight: 2 },
    { arbitrary: latin1, weight: 1 },
    { arbitrary: unicode, weight: 3 },
    { arbitrary: anyControl, weight: 1 },
    { arbitrary: surrogate, weight: 1 },
  ),
}

/** Values of those characters, with spaces and tabs around them, or empty. */
export function headerValue(units: fc.Arbitrary<string>): fc.Arbitrary<string> {
  const edge = fc.string({ unit: space, maxLength: 2 })
  return fc.oneof(
    { arbitrary: fc.constant(''), weight: 1 },
    { arbitrary: fc.tuple(edge, fc.string({ unit: units, maxLength: 24 }), edge).map(([before, core, after]) => before + core + after), weight: 9 },
  )
}

/** Allow-listed names, in any case, so fields repeat (and repeat under another case). */
export const REPLAYED_NAMES = ['x-a', 'x-b', 'cache-control', 'content-disposition', 'link', 'set-cookie']
export const headerName: fc.Arbitrary<string> = fc
  .tuple(fc.constantFrom(...REPLAYED_NAMES), fc.boolean())
  .map(([name, upper]) => (upper ? name.replace(/(^|-)([a-z])/g, (_, dash: string, first: string) => dash + first.toUpperCase()) : name))

/** A route's header fields, a name any number of times. */
export function headerFields(units: fc.Arbitrary<string>): fc.Arbitrary<Array<[string, string]>> {
  return fc.array(fc.tuple(headerName, headerValue(units)), { maxLength: 8 })
}

/** Statuses a replay is made of: 2xx, 3xx and the 4xx that are stored (not 408, 425, 429). */
export const storedStatus: fc.Arbitrary<number> = fc.integer({ min: 200, max: 499 }).filter((status) => ![408, 425, 429].includes(status))

/**
 * What a replay carries of `fields`: by name (lower case), the replayed values in order,
 * joined with `, ` as a client reads a repeated field (`Set-Cookie` apart, as a list).
 */
export function replayedFields(fields: ReadonlyArray<readonly [string, string]>): Map<string, string[]> {
  const byName = new Map<string, string[]>()
  for (const [name, value] of fields) {
    const replayed = replayedValue(value)
    if (replayed !== null) byName.set(name.toLowerCase(), [...(byName.get(name.toLowerCase()) ?? []), replayed])
  }
  return byName
}
