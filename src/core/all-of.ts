/**
 * A list of every value of the string union `T`, checked by the compiler: a value of `T`
 * left out, or one `T` does not have, fails the build. Where a type's values are also
 * needed at run time (a metric's label values, whose series start at 0), the type stays
 * the one reference and the list follows it.
 * @example
 * type Side = 'buy' | 'sell'
 * const SIDES = allOf<Side>()(['buy', 'sell']) // readonly ['buy', 'sell']; ['buy'] alone fails to compile
 */
export function allOf<T extends string>(): <const L extends readonly T[]>(list: L & Complete<T, L>) => L {
  return (list) => list
}

/** Nothing more when `L` holds every value of `T`; otherwise a `missing` field naming what it lacks, which no list has. */
type Complete<T extends string, L extends readonly T[]> = [Exclude<T, L[number]>] extends [never] ? unknown : { readonly missing: Exclude<T, L[number]> }
