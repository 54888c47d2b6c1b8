/**
 * A string whose stored form, its JSON text, is exactly `bytes` bytes of UTF-8, for
 * the contract cases that hold a store to its `maxOutcomeBytes`. It is made to catch a
 * store that counts the wrong thing: characters of 2, 3 and 4 bytes (a surrogate pair)
 * so that bytes, UTF-16 units and characters all differ; a quarter of the bytes in one
 * run of 3-byte characters (the most bytes a store that splits by UTF-16 units puts in
 * one part); the rest ASCII (the most parts).
 */
export function sizedValue(bytes: number): string {
  const head = 'é€😀' // 2 + 3 + 4 bytes
  const wide = '€'.repeat(Math.max(0, Math.floor((bytes - 11) / 4 / 3)))
  const rest = bytes - 2 - 9 - wide.length * 3
  if (rest < 0) throw new RangeError(`sizedValue: ${bytes} bytes is too few`)
  return `${head}${wide}${'a'.repeat(rest)}`
}
